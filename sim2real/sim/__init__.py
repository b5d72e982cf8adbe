"""The engine contract, below every engine: the simulated world's state, shapes and steps, and the runs of steps.

What a world is (:class:`World`: one box, the table, a kinematic pusher), what its step returns
(:class:`StepResult`, :class:`ContactInfo`, :class:`StepOutcome`, an engine's :class:`Reproduction` of a
hard step), the arrays a run fills (:class:`Trajectory`) and the engine-neutral drivers over it
(:func:`advance_each`, :func:`rollout`), the box's state and geometry, the pusher shapes, gravity, and the
xArm's joint servo model (:mod:`sim2real.sim.servo`), which the simulated arm and the controller emulator
share. Nothing here imports an engine: ours is :mod:`sim2real.physics`, the registry and MuJoCo's are in
:mod:`sim2real.engines`.
"""

from sim2real.sim.box import box_inertia, table_distance, uniform_support_ratio
from sim2real.sim.constants import GRAVITY
from sim2real.sim.errors import SimulationError
from sim2real.sim.outcome import Reproduction, StepOutcome
from sim2real.sim.rollout import Rollout, rollout
from sim2real.sim.shapes import Capsule, Sphere, placement_pose
from sim2real.sim.solve_log import SolveLog, SolveSummary, save_hard_steps
from sim2real.sim.state import STATE_SIZE, BoxState
from sim2real.sim.step import ContactInfo, StepResult, checked_step_inputs
from sim2real.sim.trajectory import Trajectory
from sim2real.sim.world import World, advance_each

__all__ = [
    "GRAVITY", "STATE_SIZE", "BoxState", "Capsule", "ContactInfo", "Reproduction", "Rollout", "SimulationError",
    "SolveLog", "SolveSummary", "Sphere", "StepOutcome", "StepResult", "Trajectory", "World", "advance_each",
    "box_inertia", "checked_step_inputs", "placement_pose", "rollout", "save_hard_steps", "table_distance",
    "uniform_support_ratio",
]
