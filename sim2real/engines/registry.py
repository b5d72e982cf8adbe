"""The engines by name, and :func:`make_world`, the one place a world is built from a name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sim2real.errors import InputError

if TYPE_CHECKING:  # the engines' own modules load only when a world is built: `--help` stays fast
    from sim2real.params import ParameterSet
    from sim2real.physics.settings import SolverSettings
    from sim2real.sim.shapes import Capsule, Sphere
    from sim2real.sim.world import World

#: A world factory: parameters, pusher shape (or None), solver settings of our engine.
WorldFactory = Callable[["ParameterSet", "Sphere | Capsule | None", "SolverSettings"], "World"]


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


def _ours_warm_up(params: ParameterSet, gradients: bool = False) -> None:
    from sim2real.physics.warmup import warm_up
    from sim2real.physics.world import BoxWorld

    warm_up(BoxWorld.from_params(params), float(params["pusher.radius"]), gradients=gradients)


@dataclass(frozen=True)
class Engine:
    """One registry entry: what an engine is and what it can do (its capabilities), never its name.

    Attributes
    ----------
    factory : WorldFactory
        Builds a world.
    description : str
        One line for ``--help`` and reports.
    differentiable : callable
        The parameters its worlds differentiate (a function, so that naming them imports no
        engine library).
    differentiates_arm : bool
        Its step Jacobians chain through the simulated arm (servo and PD Jacobians, forward
        mode), so whole arm trials have gradients; otherwise the arm is simulated but not
        differentiated (fits play the pusher back instead).
    jacobian : str
        How a fit's Jacobian is formed with it (fit.json ``data.jacobian``).
    warm_up : callable or None
        ``warm_up(params, gradients=False)`` prepares the engine before a real-time duty or a worker's first
        task (compiles kernels; with ``gradients`` also those of the derivatives); None when there is
        nothing to prepare.
    """

    factory: WorldFactory
    description: str
    differentiable: Callable[[], tuple[str, ...]]
    differentiates_arm: bool = False
    jacobian: str = ""
    warm_up: Callable[..., None] | None = None


#: Registry: name -> entry; the first is the default.
ENGINES: dict[str, Engine] = {
    "ours": Engine(_ours, "hard contact, exact Coulomb cones, interior-point solve, implicit gradients "
                   "(sim2real.physics)", _ours_differentiable, differentiates_arm=True,
                   jacobian="implicit simulator gradients (engine IFT, servo and PD analytic), forward-mode chained",
                   warm_up=_ours_warm_up),
    "mujoco": Engine(_mujoco, "MuJoCo's soft convex contact (solref/solimp), Jacobians by finite differences of "
                     "rollouts", _mujoco_differentiable,
                     jacobian="mujoco engine: central finite differences of whole rollouts (relative step 1e-2; "
                              "of single steps for horizon 1, relative step 1e-6)"),
}


def engine(name: str) -> Engine:
    """The registry entry (capabilities) of ``name``; a one-line error for an unknown name."""
    return ENGINES[check_engine(name)]


def differentiable(name: str) -> tuple[str, ...]:
    """Parameters the worlds of engine ``name`` differentiate (ours implicitly, MuJoCo by finite differences)."""
    return engine(name).differentiable()


def check_engine(name: str) -> str:
    """``name`` if registered, else a one-line :class:`Sim2RealError` listing the engines."""
    if name not in ENGINES:
        raise InputError(f"unknown engine '{name}' (choose from {', '.join(ENGINES)})")
    return name


def make_world(engine_name: str, params: ParameterSet, pusher: Sphere | Capsule | None = None,
               settings: SolverSettings | None = None) -> World:
    """A world of ``engine`` with ``params`` and the pusher shape (None: no pusher).

    Raises
    ------
    Sim2RealError
        Unknown engine, or an engine whose library is not installed (the message says how to install it).
    """
    from sim2real.physics.settings import SolverSettings

    return engine(engine_name).factory(params, pusher, settings or SolverSettings())
