"""Our engine: a free box on a table pushed by kinematic primitives, with hard contact.

Hard contact with exact Coulomb cones, solved per step by a primal-dual interior-point method
(Mehrotra predictor-corrector, analytic cone line search); gradients by the implicit function
theorem on the solver residual at ``contact.kappa_grad``. It implements the engine contract of
:mod:`sim2real.sim` (:class:`BoxWorld` is a :class:`~sim2real.sim.world.World`); rollouts, states,
shapes and step outcomes belong to that contract, not to this engine.
"""

from sim2real.physics.ladder import HardStep, solve_step
from sim2real.physics.settings import SolverSettings
from sim2real.physics.warm_start import WarmStart
from sim2real.physics.world import DIFFERENTIABLE_PARAMS, BoxWorld

__all__ = ["DIFFERENTIABLE_PARAMS", "BoxWorld", "HardStep", "SolverSettings", "WarmStart", "solve_step"]
