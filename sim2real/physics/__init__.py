"""The differentiable contact engine: a free box on a table pushed by kinematic primitives.

Hard contact with exact Coulomb cones, solved per step by a primal-dual interior-point method
(Mehrotra predictor-corrector, analytic cone line search); gradients by the implicit function
theorem on the solver residual at ``contact.kappa_grad``; rollouts with forward-mode sensitivities.
"""

from sim2real.physics.errors import SimulationError
from sim2real.physics.ladder import HardStep, save_hard_steps, solve_step
from sim2real.physics.outcome import SolveLog, SolveSummary, StepOutcome
from sim2real.physics.rollout import Rollout, rollout
from sim2real.physics.settings import SolverSettings
from sim2real.physics.shapes import Capsule, Sphere
from sim2real.physics.state import STATE_SIZE, BoxState
from sim2real.physics.warm_start import WarmStart
from sim2real.physics.world import DIFFERENTIABLE_PARAMS, BoxWorld, ContactInfo, StepResult

__all__ = [
    "DIFFERENTIABLE_PARAMS", "STATE_SIZE", "BoxState", "BoxWorld", "Capsule", "ContactInfo", "HardStep", "Rollout",
    "SimulationError", "SolveLog", "SolveSummary", "SolverSettings", "Sphere", "StepOutcome", "StepResult",
    "WarmStart", "rollout", "save_hard_steps", "solve_step",
]
