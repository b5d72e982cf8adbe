"""The engines by name, and :func:`make_world`, the one place a world is built from a name."""

from __future__ import annotations

from collections.abc import Callable

from sim2real.engines.base import World
from sim2real.errors import Sim2RealError
from sim2real.params import ParameterSet
from sim2real.physics.shapes import Capsule, Sphere
from sim2real.physics.solver import SolverSettings

#: A world factory: parameters, pusher shape (or None), solver settings of our engine.
WorldFactory = Callable[[ParameterSet, "Sphere | Capsule | None", SolverSettings], World]

#: Default engine.
DEFAULT_ENGINE = "ours"


def _ours(params: ParameterSet, pusher: Sphere | Capsule | None, settings: SolverSettings) -> World:
    from sim2real.physics.world import BoxWorld

    return BoxWorld(params, pusher, settings)


def _mujoco(params: ParameterSet, pusher: Sphere | Capsule | None, settings: SolverSettings) -> World:
    from sim2real.engines.mujoco_world import MujocoWorld

    return MujocoWorld(params, pusher, strict=settings.strict)


#: Registry: name -> (factory, one-line description).
ENGINES: dict[str, tuple[WorldFactory, str]] = {
    "ours": (_ours, "hard contact, exact Coulomb cones, interior-point solve, implicit gradients (sim2real.physics)"),
    "mujoco": (_mujoco, "MuJoCo's soft convex contact (solref/solimp), gradients by finite differences of steps"),
}


def engine_names() -> tuple[str, ...]:
    """Registered engine names, default first."""
    return tuple(ENGINES)


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
    factory, _ = ENGINES[check_engine(engine)]
    return factory(params, pusher, settings or SolverSettings())
