"""What a residual evaluation is asked for and what it returns: the residual groups and their weights
(:class:`Weights`), the specification of a trial's residuals (:class:`ResidualSpec`), the rows and Jacobian
of one trial (:class:`TrialResiduals`), which parameters have derivatives (:func:`available_gradients`),
and the weighted pose error (:func:`pose_residual`). :mod:`sim2real.sysid.residuals.trial` computes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from sim2real.control.sim_platform import (
    ENGINE_PARAMS,
    PD_PARAMS,
    SERVO_PARAMS,
)
from sim2real.engines import check_engine, differentiable
from sim2real.engines import engine as engine_entry
from sim2real.errors import InputError
from sim2real.sim import SolveSummary
from sim2real.spatial import conjugate, left_matrix
from sim2real.sysid.problem import (
    MODES,
    PUSHER_SHAPES,
    PUSHER_SOURCES,
    SIMULATED_ARM_MODES,
    PusherShape,
    PusherSource,
    ReplayMode,
    TrialData,
    check_pusher_shape,
    mode_pusher_source,
    resolve_mode,
    resolve_pusher,
    trial_shape,
)

#: Residual groups, in the order of their integer codes in :attr:`TrialResiduals.groups`.
GROUPS: tuple[str, ...] = ("box_position", "box_orientation", "joint_position", "joint_velocity")
COM_PARAMS: tuple[str, ...] = ("box.com_x", "box.com_y", "box.com_z")
#: Hard-step reproduction records kept per trial evaluation.
MAX_HARD_STEPS = 20


@dataclass(frozen=True)
class Weights:
    """Multipliers of the residual groups (the inverse of the error each group tolerates).

    Attributes
    ----------
    position : float
        Box position rows, 1/m (default 1000: 1 mm counts as 1).
    orientation : float
        Box orientation rows, 1/rad (default 100: 0.01 rad counts as 1).
    joint_position : float
        Joint angle rows, 1/rad (default 1000).
    joint_velocity : float
        Joint velocity rows, s/rad (default 100).
    """

    position: float = 1000.0
    orientation: float = 100.0
    joint_position: float = 1000.0
    joint_velocity: float = 100.0

    @classmethod
    def parse(cls, text: str | None) -> Weights:
        """Parse ``"position=1000,orientation=50,..."`` (unnamed groups keep their default).

        Raises
        ------
        Sim2RealError
            Unknown group, non-numeric, negative or non-finite weight, or all weights zero.
        """
        if not text:
            return cls()
        known = {f.name for f in fields(cls)}
        values: dict[str, float] = {}
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            name, sep, raw = part.partition("=")
            name = name.strip()
            if not sep or name not in known:
                raise InputError(f"a residual weight expects GROUP=VALUE with GROUP one of "
                                 f"{', '.join(sorted(known))}; got '{part}'", option="weights")
            try:
                value = float(raw)
            except ValueError:
                raise InputError(f"residual weight {name}: '{raw.strip()}' is not a number", option="weights") from None
            if not np.isfinite(value) or value < 0.0:
                raise InputError(f"residual weight {name}: weight must be finite and >= 0, got {raw.strip()}",
                                 option="weights")
            values[name] = value
        weights = cls(**values)
        if all(getattr(weights, f.name) == 0.0 for f in fields(cls)):
            raise InputError("the residual weights are all zero; nothing to fit", option="weights")
        return weights

    def as_dict(self) -> dict[str, float]:
        """``{group: weight}``."""
        return {f.name: float(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True)
class ResidualSpec:
    """How a trial is compared with the simulator.

    Attributes
    ----------
    horizon : int or None
        Steps per teacher-forced segment (1 = one-step), or None for whole trials.
    weights : Weights
    mode : str
        Whole trials: ``"commands"`` (drive the simulated arm by the recorded real commands),
        ``"closed"`` (PD law on the recorded reference), ``"kinematic"`` / ``"pusher"`` (the
        pusher played back) or ``"auto"`` (see :func:`sim2real.sysid.problem.inputs.resolve_mode`).
    pusher : str
        Source of a played-back pusher: ``"auto"`` (recorded pose when present, else FK of
        the recorded joint states), ``"recorded"`` or ``"arm"``.
    pusher_shape : str
        ``"sphere"`` (default) or ``"rod"``: the shape of a recorded pusher (the rod's tip at the
        recorded position; :mod:`sim2real.sysid.problem.inputs`). The arm's pusher is always a sphere.
    strict : bool
        Raise on the first engine step that does not converge (instead of a degraded step).
    exact_gradients : bool
        True (default): take the engine's implicit gradients at the forward solution
        (``contact.kappa_grad`` set to ``contact.kappa_sim``), i.e. the derivatives of the
        very residuals being minimised. False: at the parameters' ``contact.kappa_grad``
        (smoothed contact; biased for sticking and resting contacts).
    engine : str
        ``"ours"`` (default) or ``"mujoco"`` (:mod:`sim2real.engines`): MuJoCo's Jacobians are finite
        differences, and it does not differentiate the simulated arm.
    """

    horizon: int | None = 1
    weights: Weights = Weights()
    mode: ReplayMode = "auto"
    exact_gradients: bool = True
    pusher: PusherSource = "auto"
    strict: bool = False
    pusher_shape: PusherShape = "sphere"
    engine: str = "ours"

    def __post_init__(self) -> None:
        check_engine(self.engine)
        if self.horizon is not None and (not isinstance(self.horizon, int) or self.horizon < 1):
            raise InputError(f"horizon must be a positive number of steps or 'trial', got {self.horizon!r}")
        if self.mode not in MODES:
            raise InputError(f"mode must be one of {', '.join(MODES)}, got '{self.mode}'")
        if self.pusher not in PUSHER_SOURCES:
            raise InputError(f"pusher must be one of {', '.join(PUSHER_SOURCES)}, got '{self.pusher}'")
        if self.pusher_shape not in PUSHER_SHAPES:
            raise InputError(f"pusher_shape must be one of {', '.join(PUSHER_SHAPES)}, got '{self.pusher_shape}'")

    def resolved_mode(self, data: TrialData) -> str:
        """The concrete mode of ``data`` under this spec (whole trials; ``"segments"`` for horizons N).

        Raises
        ------
        Sim2RealError
            The trial lacks a topic the mode or the pusher source needs.
        """
        if self.horizon is not None:
            resolve_pusher(data, self.pusher)
            return "segments"
        return resolve_mode(data, self.mode, self.pusher)

    def pusher_source(self, data: TrialData) -> str:
        """``"simulated"``, ``"recorded"``, ``"arm"`` or ``"none"``: where this spec takes the pusher from.

        Raises
        ------
        Sim2RealError
            Missing inputs, or a pusher shape that does not apply to the source (a rod for the arm).
        """
        source = mode_pusher_source(data, self.resolved_mode(data), self.pusher)
        check_pusher_shape(data, source, trial_shape(data, self.pusher_shape))
        return source

    @property
    def label(self) -> str:
        """``"1"``, ``"N"`` or ``"trial"`` as given on the command line."""
        return "trial" if self.horizon is None else str(self.horizon)


@dataclass(frozen=True)
class TrialResiduals:
    """Residuals of one trial.

    Attributes
    ----------
    name : str
        Trial name.
    residuals : ndarray, shape (m,)
        Weighted residuals (simulated minus recorded, times the group weight).
    jacobian : ndarray, shape (m, p) or None
        d residuals / d parameters, in the order of ``grad_names``.
    groups : ndarray of int, shape (m,)
        Index into :data:`GROUPS` of each row.
    grad_names : tuple of str
    dropped : ndarray of bool, shape (m,) or None
        Rows that depend on a degraded engine step (at or after it in the same segment or
        rollout); None means none.
    solve : SolveSummary or None
        Outcome tally of the engine steps taken (None when no engine step was taken).
    hard_steps : tuple of HardStep
        Reproduction records of the first recovered or degraded steps (at most 20).
    """

    name: str
    residuals: np.ndarray
    jacobian: np.ndarray | None
    groups: np.ndarray
    grad_names: tuple[str, ...] = ()
    dropped: np.ndarray | None = None
    solve: SolveSummary | None = None
    hard_steps: tuple[Any, ...] = field(default=(), repr=False)

    @property
    def dropped_mask(self) -> np.ndarray:
        """``dropped`` as a full boolean mask, shape (m,)."""
        if self.dropped is None:
            return np.zeros(self.residuals.shape[0], dtype=bool)
        return self.dropped

    @property
    def degraded_steps(self) -> int:
        """Degraded engine steps taken."""
        return 0 if self.solve is None else int(self.solve.degraded)

    def counts(self) -> dict[str, int]:
        """Rows per residual group."""
        return {g: int(np.sum(self.groups == i)) for i, g in enumerate(GROUPS) if np.any(self.groups == i)}

    def rms(self, weights: Weights) -> dict[str, float]:
        """Root-mean-square *unweighted* error per group (m, rad, rad, rad/s)."""
        scale = (weights.position, weights.orientation, weights.joint_position, weights.joint_velocity)
        out = {}
        for i, g in enumerate(GROUPS):
            rows = self.residuals[self.groups == i]
            if rows.size and scale[i] > 0.0:
                out[g] = float(np.sqrt(np.mean((rows / scale[i]) ** 2)))
        return out


def available_gradients(kind: str, horizon: int | None, mode: str = "commands",
                        engine: str = "ours") -> tuple[str, ...]:
    """Parameters whose residual derivatives are available.

    Parameters
    ----------
    kind : str
        ``"arm"``, ``"pusher"`` or ``"box"`` (:attr:`TrialData.kind`).
    horizon : int or None
    mode : str
        Resolved whole-trial mode (horizon None only): the simulated-arm modes add the servo
        and PD parameters; played-back pushers give the engine's only.
    engine : str
        ``"ours"`` or ``"mujoco"``; the simulated arm is differentiated with our engine only.
    """
    engine_names = differentiable(engine)
    if kind != "arm":
        return engine_names
    if horizon is None:
        if mode in SIMULATED_ARM_MODES:
            arm = engine_entry(engine).differentiates_arm
            return tuple(ENGINE_PARAMS) + tuple(SERVO_PARAMS) + tuple(PD_PARAMS) if arm else ()
        return engine_names
    return engine_names + tuple(SERVO_PARAMS) + tuple(PD_PARAMS)


def pose_residual(state: np.ndarray, position: np.ndarray, quaternion: np.ndarray,
                  weights: Weights) -> tuple[np.ndarray, np.ndarray]:
    """Weighted pose error of a simulated box state against a recorded pose.

    Parameters
    ----------
    state : ndarray, shape (13,)
        Simulated box state.
    position : ndarray, shape (3,)
        Recorded centre, m.
    quaternion : ndarray, shape (4,)
        Recorded orientation (w, x, y, z).
    weights : Weights

    Returns
    -------
    residual : ndarray, shape (6,)
        ``w_p (p_sim - p_rec)`` and ``w_o 2 sgn(w) vec(q_rec* ⊗ q_sim)``.
    d_residual : ndarray, shape (6, 13)
        Its derivative with respect to the state vector.
    """
    residual, d_residual = pose_residuals(state[None], position[None], quaternion[None], weights)
    return residual[0], d_residual[0]


def pose_residuals(states: np.ndarray, positions: np.ndarray, quaternions: np.ndarray,
                   weights: Weights) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pose_residual` of ``n`` states at once.

    Parameters
    ----------
    states : ndarray, shape (n, 13)
    positions : ndarray, shape (n, 3)
        Recorded centres, m.
    quaternions : ndarray, shape (n, 4)
        Recorded orientations (w, x, y, z).
    weights : Weights

    Returns
    -------
    residual : ndarray, shape (n, 6)
    d_residual : ndarray, shape (n, 6, 13)
    """
    left = left_matrix(conjugate(quaternions))  # q_rec* ⊗ ·, (n, 4, 4)
    relative = np.einsum("nij,nj->ni", left, states[:, 3:7])
    sign = np.where(relative[:, 0] >= 0.0, 1.0, -1.0)
    count = states.shape[0]
    residual = np.empty((count, 6))
    residual[:, :3] = weights.position * (states[:, :3] - positions)
    residual[:, 3:] = weights.orientation * 2.0 * sign[:, None] * relative[:, 1:]
    d_residual = np.zeros((count, 6, 13))
    d_residual[:, 0, 0] = d_residual[:, 1, 1] = d_residual[:, 2, 2] = weights.position
    d_residual[:, 3:, 3:7] = weights.orientation * 2.0 * sign[:, None, None] * left[:, 1:]
    return residual, d_residual
