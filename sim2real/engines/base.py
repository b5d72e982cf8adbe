"""What every simulation engine offers: a box world that steps a :class:`BoxState` under a pusher.

The toolkit simulates one free box on a table, pushed by a kinematic sphere or capsule. An engine
is anything that advances that world one time step ``sim.dt`` and can say how the next state
depends on the state, the pusher placement and the parameters. Rollouts
(:func:`~sim2real.physics.rollout.rollout`), the mirrored arm, replays and fits use only this
interface, so a second engine enters through :data:`~sim2real.engines.registry.ENGINES` and nowhere
else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from sim2real.params import ParameterSet
from sim2real.physics.shapes import Capsule, Sphere
from sim2real.physics.state import BoxState
from sim2real.physics.trajectory import Trajectory
from sim2real.physics.warm_start import WarmStart
from sim2real.physics.world import StepResult


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
        :meth:`step`, of whole rollouts in :func:`~sim2real.physics.rollout.rollout`).
    differentiable : tuple of str
        Parameters :meth:`step` can differentiate with respect to.
    """

    params: ParameterSet
    pusher: Sphere | Capsule | None
    engine: str
    gradient_method: str
    differentiable: tuple[str, ...]

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

    def step(self, state: BoxState, pusher_start: np.ndarray | None = None, pusher_end: np.ndarray | None = None,
             grad: bool = False, param_names: Sequence[str] = (), step_index: int | None = None,
             warm_start: WarmStart | None = None) -> StepResult:
        """Advance one step; see :meth:`sim2real.physics.world.BoxWorld.step` for the contract.

        ``warm_start`` is the trajectory's memory of its previous step (one object per trajectory); an
        engine that does not warm-start its solver from it ignores it.
        """
        ...

    def advance(self, traj: Trajectory, first: int, last: int, running: np.ndarray | None = None,
                running0: np.ndarray | None = None) -> None:
        """Steps ``first .. last - 1`` of a :class:`~sim2real.physics.trajectory.Trajectory` in place.

        The result must be that of calling :meth:`step` for each step with ``traj.warm`` and chaining the
        derivatives (``running`` (13, P), ``running0`` (13, 13): those of ``traj.states[first]``, default zero
        and identity, updated in place): :func:`~sim2real.physics.trajectory.advance_each` does exactly
        that; an engine may run the steps faster (ours compiles the loop).
        """
        ...
