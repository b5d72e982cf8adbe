"""The engines by name, and :func:`make_world`, the one place a world is built from a name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sim2real.engines.base import World
from sim2real.errors import Sim2RealError
from sim2real.params import ParameterSet
from sim2real.physics.shapes import Capsule, Sphere
from sim2real.physics.solver import SolverSettings

#: A world factory: parameters, pusher shape (or None), solver settings of our engine.
WorldFactory = Callable[[ParameterSet, "Sphere | Capsule | None", SolverSettings], World]

def _ours(params: ParameterSet, pusher: Sphere | Capsule | None, settings: SolverSettings) -> World:
    from sim2real.physics.world import BoxWorld

    return BoxWorld(params, pusher, settings)


def _mujoco(params: ParameterSet, pusher: Sphere | Capsule | None, settings: SolverSettings) -> World:
    from sim2real.engines.mujoco_world import MujocoWorld

    return MujocoWorld(params, pusher, strict=settings.strict)


def _ours_differentiable() -> tuple[str, ...]:
    from sim2real.physics.world import DIFFERENTIABLE_PARAMS

    return tuple(DIFFERENTIABLE_PARAMS)


def _mujoco_differentiable() -> tuple[str, ...]:
    from sim2real.engines.mujoco_world import MUJOCO_DIFFERENTIABLE

    return MUJOCO_DIFFERENTIABLE


@dataclass(frozen=True)
class Engine:
    """One registry entry: the world factory, a one-line description, and the parameters its worlds
    differentiate (a function, so that naming them imports no engine library)."""

    factory: WorldFactory
    description: str
    differentiable: Callable[[], tuple[str, ...]]


#: Registry: name -> entry; the first is the default.
ENGINES: dict[str, Engine] = {
    "ours": Engine(_ours, "hard contact, exact Coulomb cones, interior-point solve, implicit gradients "
                   "(sim2real.physics)", _ours_differentiable),
    "mujoco": Engine(_mujoco, "MuJoCo's soft convex contact (solref/solimp), Jacobians by finite differences of "
                     "rollouts", _mujoco_differentiable),
}


def differentiable(engine: str) -> tuple[str, ...]:
    """Parameters the worlds of ``engine`` differentiate (ours implicitly, MuJoCo by finite differences)."""
    return ENGINES[check_engine(engine)].differentiable()


def check_engine(name: str) -> str:
    """``name`` if registered, else a one-line :class:`Sim2RealError` listing the engines."""
    if name not in ENGINES:
        raise Sim2RealError(f"unknown engine '{name}' (choose from {', '.join(ENGINES)})")
    return name


def make_world(engine: str, params: ParameterSet, pusher: Sphere | Capsule | None = None,
               settings: SolverSettings | None = None) -> World:
    """A world of ``engine`` with ``params`` and the pusher shape (None: no pusher).

    Raises
    ------
    Sim2RealError
        Unknown engine, or an engine whose library is not installed (the message says how to install it).
    """
    return ENGINES[check_engine(engine)].factory(params, pusher, settings or SolverSettings())
