"""What one step of an engine returns: the next state, its derivatives, a contact summary and how the solve ended;
and the checks every engine applies to a step's arguments."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sim2real.errors import InputError
from sim2real.params import spec
from sim2real.sim.outcome import Reproduction, StepOutcome
from sim2real.sim.shapes import Capsule, Sphere
from sim2real.sim.state import BoxState

__all__ = ["ContactInfo", "StepResult", "checked_step_inputs"]


@dataclass(frozen=True)
class ContactInfo:
    """Contact summary of one step.

    Attributes
    ----------
    active : int
        Contacts carrying a normal impulse above 1e-3 m g dt.
    table_distance : float
        Lowest box corner above the table at the end of the step, m (negative = penetration).
    pusher_distance : float
        Pusher-box signed distance at the end of the step, m (``inf`` without pusher).
    pusher_force : float
        Mean pusher-box normal force over the step, N.
    in_solve : int
        Contacts in the step's solve (the others were far from touching); -1 when the engine does not say.
    """

    active: int
    table_distance: float
    pusher_distance: float
    pusher_force: float
    in_solve: int = -1


@dataclass(frozen=True)
class StepResult:
    """Outcome of a world's :meth:`~sim2real.sim.world.World.step`.

    Attributes
    ----------
    state : BoxState
        State at the end of the step (ours: solved at ``contact.kappa_sim``, hard contact).
    contacts : ContactInfo
    iterations : int
        Interior-point iterations (all central-path targets, all sub-steps).
    violation : tuple of float
        (residual violation, complementarity violation) of the final solve, scaled.
    d_state : ndarray (13, 13) or None
        d next state / d state (raw quaternion components; their radial direction has no effect).
    d_pusher_start, d_pusher_end : ndarray (13, 3) or (13, 6), or None
        d next state / d pusher placement at the start / end of the step (m world): the sphere's
        centre (13, 3), or the capsule's two segment end points (13, 6).
    d_params : ndarray (13, p) or None
        d next state / d parameter, in the order asked for.
    param_names : tuple of str
    smoothed_state : ndarray (13,) or None
        With gradients, for an engine whose gradients belong to a smoothed problem (ours: the next state at
        ``contact.kappa_grad``).
    outcome : StepOutcome
        Converged, recovered (the engine's fallback solved it exactly, dearer) or degraded (see
        :mod:`sim2real.sim.outcome`).
    rung : str
        What produced the answer, named by the engine (``"first"`` when converged).
    kappa : float
        Our engine: central-path value of ``state`` (larger than ``contact.kappa_sim`` only when degraded);
        0 for engines without one.
    problem : Reproduction or None
        For a recovered or degraded step: the engine's record of the step, ready to be saved and solved
        again (ours: :class:`~sim2real.physics.ladder.HardStep`).
    """

    state: BoxState
    contacts: ContactInfo
    iterations: int
    violation: tuple[float, float]
    d_state: np.ndarray | None = None
    d_pusher_start: np.ndarray | None = None
    d_pusher_end: np.ndarray | None = None
    d_params: np.ndarray | None = None
    param_names: tuple[str, ...] = ()
    smoothed_state: np.ndarray | None = field(default=None, repr=False)
    outcome: StepOutcome = StepOutcome.CONVERGED
    rung: str = "first"
    kappa: float = 0.0
    problem: Reproduction | None = field(default=None, repr=False)


def checked_step_inputs(engine: str, differentiable: Sequence[str], pusher: Sphere | Capsule | None,
                        param_names: Sequence[str], pusher_start: np.ndarray | None, pusher_end: np.ndarray | None,
                        step_index: int | None = None
                        ) -> tuple[tuple[str, ...], np.ndarray | None, np.ndarray | None]:
    """The arguments of a world's ``step`` checked: parameter names, and the pusher placements flattened.

    Returns
    -------
    names : tuple of str
    start, end : ndarray (3,) or (6,), or None
        Both None when the step has no pusher.

    Raises
    ------
    Sim2RealError
        An unknown or non-differentiable name (``engine`` names the engine in the message), one placement
        without the other, a placement without a pusher shape, a placement of the wrong size or not finite.
    """
    names = tuple(param_names)
    for name in names:
        spec(name)
        if name not in differentiable:
            raise InputError(f"parameter '{name}' is not differentiable by {engine} "
                             f"(choose from {', '.join(differentiable)})")
    with_pusher = pusher_start is not None or pusher_end is not None
    if not with_pusher:
        return names, None, None
    if pusher_start is None or pusher_end is None:
        raise InputError("give both pusher_start and pusher_end, or neither")
    if pusher is None:
        raise InputError("this world has no pusher shape, but a pusher placement was given")
    size = pusher.placement_size
    placements = []
    for label, placement in (("pusher_start", pusher_start), ("pusher_end", pusher_end)):
        if np.size(placement) != size:
            raise InputError(f"{label} of a {type(pusher).__name__.lower()} pusher must have "
                             f"{size} numbers (m, world), got shape {np.shape(placement)}")
        flat = np.asarray(placement, dtype=float).ravel()
        if not np.isfinite(flat).all():
            where = f" at step {step_index}" if step_index is not None else ""
            raise InputError(f"{label}{where} is not finite: {flat.tolist()}")
        placements.append(flat)
    return names, placements[0], placements[1]
