"""The engine contract: what every simulation engine offers (:class:`World`), and the step loop any engine may run.

The toolkit simulates one free box on a table, pushed by a kinematic sphere or capsule. An engine is
anything that advances that world one time step ``sim.dt`` and can say how the next state depends on
the state, the pusher placement and the parameters. Rollouts (:func:`~sim2real.sim.rollout.rollout`),
the mirrored arm, replays and fits use only this interface; an engine enters through
:data:`~sim2real.engines.registry.ENGINES` and nowhere else. Ours (hard contact, implicit gradients) is
:class:`sim2real.physics.world.BoxWorld`, MuJoCo's :class:`sim2real.engines.mujoco_world.MujocoWorld`.
Nothing here imports an engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from sim2real.params import ParameterSet
from sim2real.sim.shapes import Capsule, Sphere
from sim2real.sim.state import BoxState
from sim2real.sim.step import StepResult
from sim2real.sim.trajectory import Trajectory, record_step, start_derivatives

__all__ = ["World", "advance_each"]


@runtime_checkable
class World(Protocol):
    """One box, the table and an optional kinematic pusher, with fixed parameters.

    Attributes
    ----------
    params : ParameterSet
    pusher : Sphere, Capsule or None
        Shape of the pusher; its placement is given per step (sphere centre (3,), or the capsule's two
        segment end points (6,), m, world).
    engine : str
        Registry name of the engine (``"ours"``, ``"mujoco"``).
    gradient_method : str
        How the world differentiates: ``"implicit"`` (implicit function theorem on the contact solve,
        chained through rollouts) or ``"finite differences"`` (central differences: of a single step in
        :meth:`step`, of whole rollouts in :func:`~sim2real.sim.rollout.rollout`).
    differentiable : tuple of str
        Parameters :meth:`step` can differentiate with respect to.
    """

    @property
    def params(self) -> ParameterSet: ...

    @property
    def pusher(self) -> Sphere | Capsule | None: ...

    @property
    def engine(self) -> str: ...

    @property
    def gradient_method(self) -> str: ...

    @property
    def differentiable(self) -> tuple[str, ...]: ...

    @property
    def dt(self) -> float:
        """Time step, s."""
        ...

    @property
    def half_size(self) -> np.ndarray:
        """Half edge lengths of the box, m, body frame, shape (3,)."""
        ...

    def with_params(self, values: dict[str, float]) -> World:
        """The same world with some parameters changed."""
        ...

    def new_warm_start(self) -> object | None:
        """A fresh memory of one trajectory's previous step, opaque outside the engine (None: it keeps none).

        Give the same object to every :meth:`step` of one trajectory and a new one when the state jumps
        (a new trial, a box placed by hand).
        """
        ...

    def step(self, state: BoxState, pusher_start: np.ndarray | None = None, pusher_end: np.ndarray | None = None,
             grad: bool = False, param_names: Sequence[str] = (), step_index: int | None = None,
             warm_start: object | None = None) -> StepResult:
        """Advance one step; see :meth:`sim2real.physics.world.BoxWorld.step` for the contract.

        ``warm_start`` is what :meth:`new_warm_start` returned for this trajectory, or None (a cold start:
        the step a pure function of its arguments).
        """
        ...

    def advance(self, traj: Trajectory, first: int, last: int, running: np.ndarray | None = None,
                running0: np.ndarray | None = None) -> None:
        """Steps ``first .. last - 1`` of a :class:`~sim2real.sim.trajectory.Trajectory` in place.

        The result must be that of calling :meth:`step` for each step with ``traj.warm`` and chaining the
        derivatives (``running`` (13, P), ``running0`` (13, 13): those of ``traj.states[first]``, default zero
        and identity, updated in place): :func:`~sim2real.sim.world.advance_each` does exactly
        that; an engine may run the steps faster (ours compiles the loop).
        """
        ...


def advance_each(world: World, traj: Trajectory, first: int, last: int, running: np.ndarray | None = None,
                 running0: np.ndarray | None = None) -> None:
    """Steps ``first .. last - 1`` of ``traj`` through ``world.step``, one call per time step.

    Parameters
    ----------
    world : World
    traj : Trajectory
        ``traj.states[first]`` holds the start.
    first, last : int
    running, running0 : ndarray (13, P) and (13, 13), optional
        d state / d parameters and d state / d start of ``states[first]`` (updated in place); defaults
        zero and identity.
    """
    running, running0 = start_derivatives(traj, running, running0)
    if traj.warm is None:
        traj.warm = world.new_warm_start()
    for t in range(first, last):
        start = traj.path[t] if traj.path is not None else None
        end = traj.path[t + 1] if traj.path is not None else None
        result = world.step(BoxState.from_vector(traj.states[t]), start, end, grad=traj.grad, param_names=traj.names,
                            step_index=t, warm_start=traj.warm)
        record_step(traj, t, result, world.dt, running, running0)
