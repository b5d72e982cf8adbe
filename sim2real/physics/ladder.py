"""A contact solve that always returns: the escalation ladder and reproducible hard steps.

One step of the engine is one call of :func:`~sim2real.physics.kernels.step_kernel`. When that
first solve does not converge, :func:`solve_step` escalates, each rung keeping what the previous
ones added:

1. ``smoothed-gradient`` (only when gradients are asked for at a κ_grad below 1e-7) — the forward
   state solved as a step without gradients solves it, and the gradient from a separate solve on the
   central path at κ 1e-7. Fits take gradients at κ_sim (1e-8), where the centred solve of a
   degenerate contact (a box that has just landed, with corners touching at zero force, hit by the
   pusher) can stall although the forward solve converges; one decade up it does not (all 18 such
   steps of a thin-plate fit, measured);
2. ``iterations`` — four times the Newton iterations;
3. ``substeps`` — the step split into four sub-steps (the pusher moves linearly across them);
4. ``continuation`` — the central path approached at a relaxed κ (1e-2) first, then re-tightened
   a decade at a time to the requested κ.

A step solved by any of these meets every tolerance at the requested κ: outcome ``RECOVERED``.
If none does, the answer is ``DEGRADED`` (:mod:`sim2real.sim.outcome`):

5. ``relaxed-kappa`` — the solution at a relaxed central-path value (1e-6, then 1e-4: a slightly
   softer contact, with every equality row still satisfied);
6. ``best-iterate`` — the iterate with the lowest violation that the solver found (in one step,
   and in four sub-steps; the better of the two).

In strict mode a step that would be degraded raises :class:`~sim2real.sim.errors.SimulationError`
instead, naming the step, the rungs tried and their violations.

A step that needed the ladder carries a :class:`HardStep`: everything needed to solve it again
(state, pusher placement, parameters, settings), which can be saved as a small JSON file and
re-solved with ``sim2real resolve-step FILE --trace``.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.errors import DataError, InputError
from sim2real.params import spec
from sim2real.physics import kernels
from sim2real.physics.layout import PARAMS_OFFSET, PUSHER_END_SLICE, PUSHER_START_SLICE, THETA_PARAMS, THETA_SIZE
from sim2real.physics.settings import SolverSettings
from sim2real.physics.warm_start import WarmStart
from sim2real.sim.errors import SimulationError
from sim2real.sim.outcome import StepOutcome

#: Format tag of hard-step files.
HARD_STEP_FORMAT = "sim2real.hard_step/1"
#: Rows of the per-iteration trace kept per rung when a trace is asked for.
TRACE_ROWS = 4096


@dataclass(frozen=True)
class Rung:
    """One rung of the escalation ladder.

    Attributes
    ----------
    name : str
    iterations : int
        Multiplier of ``SolverSettings.max_iterations``.
    substeps : int
        Multiplier of the step's sub-steps.
    continuation_kappa : float or None
        Intermediate central-path value (None: the settings' own).
    relaxed_kappa : float
        Lower bound put on both κ values (0: none). A relaxed answer is ``DEGRADED``.
    continuation_factor : float
        Shrink factor of the intermediate central-path target each time it is reached (0: straight
        to the requested κ; 0.1: re-tighten a decade at a time).
    accept_best : bool
        Accept a solve's best iterate when it does not converge (``DEGRADED``).
    gradient_kappa : float
        Lower bound put on κ_grad alone (0: none); the forward state stays at the requested κ. A rung
        with it is tried only for steps with gradients whose κ_grad is below it.
    leave_out_far : bool
        Leave the contacts far from touching out of the solve (``SolverSettings.skip_band``); the recovery
        rungs solve every contact, so a step the first rung cannot solve meets the ladder it always met
        (left out, the re-contact scenarios of ``benchmarks.robustness`` ended degraded 7-23 % more often).
    """

    name: str
    iterations: int = 1
    substeps: int = 1
    continuation_kappa: float | None = None
    relaxed_kappa: float = 0.0
    continuation_factor: float = 0.0
    accept_best: bool = False
    gradient_kappa: float = 0.0
    leave_out_far: bool = False

    @property
    def outcome(self) -> StepOutcome:
        """The outcome class of a step this rung solved."""
        if self.name == "first":
            return StepOutcome.CONVERGED
        return StepOutcome.DEGRADED if self.relaxed_kappa > 0.0 or self.accept_best else StepOutcome.RECOVERED


#: The ladder, first rung first.
LADDER: tuple[Rung, ...] = (
    Rung("first", leave_out_far=True),
    Rung("smoothed-gradient", gradient_kappa=1e-7),
    Rung("iterations", iterations=4),
    Rung("substeps", iterations=4, substeps=4),
    Rung("continuation", iterations=4, substeps=4, continuation_kappa=1e-2, continuation_factor=0.1),
    Rung("relaxed-kappa", iterations=4, substeps=4, continuation_kappa=1e-2, continuation_factor=0.1,
         relaxed_kappa=1e-6),
    Rung("relaxed-kappa", iterations=4, substeps=4, continuation_kappa=1e-2, continuation_factor=0.1,
         relaxed_kappa=1e-4),
    Rung("best-iterate", iterations=4, accept_best=True),
    Rung("best-iterate", iterations=4, substeps=4, continuation_kappa=1e-2, continuation_factor=0.1,
         accept_best=True),
)


@dataclass(frozen=True)
class HardStep:
    """One engine step, self-contained: enough to solve it again anywhere.

    Attributes
    ----------
    theta : ndarray (THETA_SIZE,)
        Problem vector of :func:`~sim2real.physics.kernels.step_kernel`: box state (13: position m,
        quaternion w-x-y-z, velocity m/s, angular velocity rad/s; world frame), pusher placement at the
        start and end of the step (6 + 6, m world), parameters in the order of ``THETA_PARAMS``.
    dt : float
        Step, s.
    substeps : int
    with_pusher, capsule : bool
    kappa_sim, kappa_grad : float
        Central-path values of the forward solution and of the gradients.
    grad : bool
        Whether gradients were asked for.
    settings : SolverSettings
    context : str
        Where it came from (trial, platform, fit evaluation).
    step_index : int or None
    outcome : str
        Outcome class when it was met (``recovered`` / ``degraded`` / ``failed`` in strict mode).
    rung : str
        The rung that produced the answer then.
    violation : tuple of float
        (residual, complementarity) of that answer.
    """

    theta: np.ndarray
    dt: float
    substeps: int
    with_pusher: bool
    capsule: bool
    kappa_sim: float
    kappa_grad: float
    grad: bool = False
    settings: SolverSettings = field(default_factory=SolverSettings)
    context: str = ""
    step_index: int | None = None
    outcome: str = ""
    rung: str = ""
    violation: tuple[float, float] = (0.0, 0.0)

    def with_context(self, **changes: Any) -> HardStep:
        """A copy with ``context``, ``step_index``, ``outcome``, ``rung`` or ``violation`` changed."""
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form; the problem vector is split into named parts."""
        theta = [float(v) for v in self.theta]
        start, end = PUSHER_START_SLICE, PUSHER_END_SLICE
        return {
            "format": HARD_STEP_FORMAT,
            "context": self.context, "step_index": self.step_index, "outcome": self.outcome, "rung": self.rung,
            "violation": {"residual": self.violation[0], "complementarity": self.violation[1]},
            "state": {"position_m": theta[0:3], "quaternion_wxyz": theta[3:7], "linear_velocity_m_s": theta[7:10],
                      "angular_velocity_rad_s": theta[10:13]},
            "pusher": None if not self.with_pusher else {
                "shape": "capsule" if self.capsule else "sphere",
                "start_m": theta[start] if self.capsule else theta[start.start:start.start + 3],
                "end_m": theta[end] if self.capsule else theta[end.start:end.start + 3]},
            "params": {name: theta[PARAMS_OFFSET + i] for i, name in enumerate(THETA_PARAMS)},
            "dt_s": self.dt, "substeps": self.substeps, "kappa_sim": self.kappa_sim, "kappa_grad": self.kappa_grad,
            "grad": self.grad, "settings": dataclasses.asdict(self.settings),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HardStep:
        """Inverse of :meth:`as_dict`; raises Sim2RealError naming a missing or malformed key."""
        if data.get("format") != HARD_STEP_FORMAT:
            raise DataError(f"not a hard-step file (format {data.get('format')!r}, expected {HARD_STEP_FORMAT})")
        try:
            theta = np.zeros(THETA_SIZE)
            state = data["state"]
            theta[0:3] = state["position_m"]
            theta[3:7] = state["quaternion_wxyz"]
            theta[7:10] = state["linear_velocity_m_s"]
            theta[10:13] = state["angular_velocity_rad_s"]
            pusher = data["pusher"]
            capsule = False
            if pusher is not None:
                capsule = pusher["shape"] == "capsule"
                size = 6 if capsule else 3
                theta[PUSHER_START_SLICE.start:PUSHER_START_SLICE.start + size] = pusher["start_m"]
                theta[PUSHER_END_SLICE.start:PUSHER_END_SLICE.start + size] = pusher["end_m"]
            for i, name in enumerate(THETA_PARAMS):  # files older than a parameter: its nominal value
                theta[PARAMS_OFFSET + i] = float(data["params"].get(name, spec(name).nominal))
            violation = data.get("violation", {})
            return cls(theta, float(data["dt_s"]), int(data["substeps"]), pusher is not None, capsule,
                       float(data["kappa_sim"]), float(data["kappa_grad"]), bool(data.get("grad", False)),
                       _recorded_settings(data.get("settings", {})), str(data.get("context", "")),
                       data.get("step_index"), str(data.get("outcome", "")), str(data.get("rung", "")),
                       (float(violation.get("residual", 0.0)), float(violation.get("complementarity", 0.0))))
        except (KeyError, TypeError, ValueError) as err:
            raise DataError(f"malformed hard-step file: {type(err).__name__}: {err}") from None

    def save(self, path: str | Path) -> Path:
        """Write the JSON file (refuses to overwrite); returns its path."""
        path = Path(path)
        if path.exists():
            raise InputError(f"{path} already exists; not overwriting it")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_dict(), indent=1) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> HardStep:
        """Read a file written by :meth:`save`."""
        from sim2real.paths import read_text_file

        path = Path(path)
        if not path.exists():
            raise InputError(f"hard-step file {path} does not exist")
        text = read_text_file(path, "hard-step file")
        try:
            data = json.loads(text)
        except (OSError, json.JSONDecodeError) as err:
            raise DataError(f"cannot read hard-step file {path}: {err}") from None
        if not isinstance(data, dict):
            raise DataError(f"hard-step file {path} does not hold a JSON object")
        return cls.from_dict(data)


@dataclass(frozen=True)
class Attempt:
    """What one rung did.

    Attributes
    ----------
    rung : Rung
    status : int
        ``kernels.STATUS_*`` of the compiled step.
    iterations : int
    residual, complementarity, path_error : float
        Worst violations of the rung's solves (scaled; see ``kernels.violations``).
    failed_kappa : float
        The κ whose solve failed (0 when it did not).
    trace : ndarray (rows, len(kernels.TRACE_COLUMNS)) or None
        Per-iteration trace when asked for.
    """

    rung: Rung
    status: int
    iterations: int
    residual: float
    complementarity: float
    path_error: float
    failed_kappa: float
    trace: np.ndarray | None = None

    @property
    def solved(self) -> bool:
        """The rung produced a state (converged, or accepted its best iterate)."""
        return self.status == kernels.STATUS_OK or (
            self.rung.accept_best and self.status == kernels.STATUS_BEST_ITERATE)

    def describe(self) -> str:
        """One line: rung, status, iterations and violations."""
        status = {kernels.STATUS_OK: "converged", kernels.STATUS_NOT_CONVERGED: "not converged",
                  kernels.STATUS_BREAKDOWN: "breakdown", kernels.STATUS_BEST_ITERATE: "best iterate"}[self.status]
        extra = f" at kappa={self.failed_kappa:g}" if self.failed_kappa else ""
        return (f"{self.rung.name:<14} {status}{extra}: {self.iterations} iterations, residual {self.residual:.3g}, "
                f"complementarity {self.complementarity:.3g}, central-path error {self.path_error:.3g}")


@dataclass(frozen=True)
class StepSolution:
    """The answer of :func:`solve_step`.

    Attributes
    ----------
    outcome : StepOutcome
    rung : Rung
        The rung whose answer is returned.
    attempts : tuple of Attempt
        Every rung tried, in order.
    next_state : ndarray (13,)
    jacobian : ndarray (13, THETA_SIZE) or None
        d next state / d θ (with ``grad``).
    smoothed_state : ndarray (13,) or None
        Next state at the gradient κ (with ``grad``).
    info : ndarray (kernels.INFO_SIZE,)
        The compiled step's info vector of the returned answer.
    kappa : float
        Central-path value of the returned forward state.
    """

    outcome: StepOutcome
    rung: Rung
    attempts: tuple[Attempt, ...]
    next_state: np.ndarray
    jacobian: np.ndarray | None
    smoothed_state: np.ndarray | None
    info: np.ndarray
    kappa: float

    @property
    def iterations(self) -> int:
        """Newton iterations over every rung."""
        return sum(a.iterations for a in self.attempts)

    @property
    def violation(self) -> tuple[float, float]:
        """(residual, complementarity) of the returned answer."""
        mine = next(a for a in reversed(self.attempts) if a.rung is self.rung)
        return mine.residual, mine.complementarity


def _recorded_settings(values: dict[str, Any]) -> SolverSettings:
    """The solver settings a hard-step file was recorded with. Files older than a setting ran without it:
    every contact in the solve (``skip_band`` 0), gradient solves centred as tightly as ``kappa_rtol``."""
    values = dict(values)
    values.setdefault("skip_band", 0.0)
    values.setdefault("gradient_kappa_rtol", values.get("kappa_rtol", SolverSettings().kappa_rtol))
    return SolverSettings(**values)


def settings_vector(settings: SolverSettings, rung: Rung = LADDER[0]) -> np.ndarray:
    """The settings packed in the order of the ``kernels.S_*`` indices, with a rung's escalation applied."""
    vector = np.empty(kernels.SETTINGS_SIZE)
    vector[kernels.S_RESIDUAL_TOL] = settings.residual_tol
    vector[kernels.S_KAPPA_RTOL] = settings.kappa_rtol
    vector[kernels.S_MAX_ITERATIONS] = settings.max_iterations * rung.iterations
    vector[kernels.S_TAU_MIN] = settings.tau_min
    vector[kernels.S_TAU_SOC_MAX] = settings.tau_soc_max
    vector[kernels.S_BACKTRACK] = settings.backtrack
    vector[kernels.S_MAX_BACKTRACKS] = settings.max_backtracks
    vector[kernels.S_CONT_KAPPA] = (settings.continuation_kappa if rung.continuation_kappa is None
                                    else max(settings.continuation_kappa, rung.continuation_kappa))
    vector[kernels.S_CONT_RESIDUAL_TOL] = settings.continuation_residual_tol
    vector[kernels.S_CONT_KAPPA_RTOL] = settings.continuation_kappa_rtol
    vector[kernels.S_REST_ENABLED] = 1.0 if settings.resting_shortcut else 0.0
    vector[kernels.S_REST_SPEED_TOL] = settings.resting_speed_tol
    vector[kernels.S_REST_GAP_TOL] = settings.resting_gap_tol
    vector[kernels.S_REST_PUSHER_MARGIN] = settings.resting_pusher_margin
    vector[kernels.S_REST_KAPPA_MAX] = settings.resting_kappa_max
    vector[kernels.S_GAP_FACTOR] = settings.gap_factor
    vector[kernels.S_GAP_PATIENCE] = settings.gap_patience
    vector[kernels.S_ACCEPT_BEST] = 1.0 if rung.accept_best else 0.0
    vector[kernels.S_CONT_FACTOR] = rung.continuation_factor
    vector[kernels.S_SKIP_BAND] = settings.skip_band if rung.leave_out_far else 0.0
    vector[kernels.S_GRAD_KAPPA_RTOL] = settings.gradient_kappa_rtol
    return vector


_NO_JACOBIAN = np.empty((13, THETA_SIZE))
"""Placeholder output of the compiled step when no gradients are asked for (never read)."""
_NO_DIRECTIONS = np.empty((THETA_SIZE, 0))
_NO_DIRECTIONAL_OUT = np.empty((13, 0))
"""No directions: the compiled step computes the Jacobian's columns (``world.step`` returns them all)."""


def _kernel(problem: HardStep, rung: Rung, vector: np.ndarray, trace: bool, kappa_sim: float, kappa_grad: float,
            grad: bool, warm: np.ndarray = kernels.NO_WARM
            ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """One compiled step: status, next state, Jacobian, smoothed state, info and the trace rows.

    ``warm``: the warm-start buffer the compiled step starts from and refills (``kernels.NO_WARM``: cold).
    """
    next_vec = np.empty(13)
    jacobian = np.empty((13, THETA_SIZE)) if grad else _NO_JACOBIAN
    smoothed = np.empty(13)
    info = np.empty(kernels.INFO_SIZE)
    rows = np.zeros((TRACE_ROWS, len(kernels.TRACE_COLUMNS))) if trace else kernels.NO_TRACE
    count = np.zeros(1, dtype=np.int64)
    status = kernels.step_kernel(problem.theta, problem.dt, problem.substeps * rung.substeps, problem.with_pusher,
                                 problem.capsule, kappa_sim, kappa_grad, grad, kernels.ALL_COLUMNS, vector,
                                 next_vec, jacobian, smoothed, info, rows, count, warm, _NO_DIRECTIONS,
                                 _NO_DIRECTIONAL_OUT)
    return int(status), next_vec, jacobian, smoothed, info, (rows[:min(int(count[0]), TRACE_ROWS)].copy()
                                                              if trace else None)


def _attempt(problem: HardStep, rung: Rung, vector: np.ndarray, trace: bool, warm: np.ndarray = kernels.NO_WARM
             ) -> tuple[Attempt, np.ndarray, np.ndarray | None, np.ndarray, np.ndarray, float]:
    kappa_sim = max(problem.kappa_sim, rung.relaxed_kappa)
    kappa_grad = max(problem.kappa_grad, rung.relaxed_kappa)
    if rung.gradient_kappa > 0.0 and problem.grad:
        # The forward state exactly as a step without gradients solves it (uncentred, from the cold start),
        # and the gradient from a separate centred solve at the raised κ_grad.
        status, next_vec, _, _, info, rows = _kernel(problem, rung, vector, trace, kappa_sim, kappa_sim, False)
        kappa_grad = max(kappa_grad, rung.gradient_kappa)
        g_status, _, jacobian, smoothed, g_info, g_rows = _kernel(problem, rung, vector, trace, kappa_grad,
                                                                 kappa_grad, True)
        if status == kernels.STATUS_OK and g_status != kernels.STATUS_OK:
            status, info[kernels.I_FAILED_KAPPA] = g_status, g_info[kernels.I_FAILED_KAPPA]
        info[kernels.I_ITERATIONS] += g_info[kernels.I_ITERATIONS]
        if rows is not None and g_rows is not None:
            rows = np.concatenate((rows, g_rows))
    else:
        status, next_vec, jacobian, smoothed, info, rows = _kernel(problem, rung, vector, trace, kappa_sim,
                                                                   kappa_grad, problem.grad, warm)
    attempt = Attempt(rung, status, int(info[kernels.I_ITERATIONS]), float(info[kernels.I_RESIDUAL_VIO]),
                      float(info[kernels.I_KAPPA_VIO]), float(info[kernels.I_PATH_ERROR]),
                      float(info[kernels.I_FAILED_KAPPA]) if status != kernels.STATUS_OK else 0.0, rows)
    return attempt, next_vec, (jacobian if problem.grad else None), smoothed, info, kappa_sim


def solve_step(problem: HardStep, strict: bool = False, trace: bool = False,
               first_vector: np.ndarray | None = None, warm: WarmStart | None = None) -> StepSolution:
    """Solve one step, escalating through :data:`LADDER` until a rung returns a state.

    Parameters
    ----------
    problem : HardStep
    strict : bool
        Raise :class:`SimulationError` instead of returning a ``DEGRADED`` answer.
    trace : bool
        Record the per-iteration trace of every rung tried.
    first_vector : ndarray, optional
        Pre-packed settings vector of the first rung (saves packing it per step).
    warm : WarmStart, optional
        The trajectory's previous solution: the first rung starts from it and stores its own solution
        there (recovery rungs start cold; after a step the first rung did not solve, it is empty).

    Returns
    -------
    StepSolution

    Raises
    ------
    SimulationError
        In strict mode when no recovery rung converges; or when even the best iterate is not
        finite (non-finite problem data).
    """
    attempts: list[Attempt] = []
    best: tuple[float, StepSolution] | None = None  # best-iterate answers compete on their violation
    for number, rung in enumerate(LADDER):
        if strict and rung.outcome == StepOutcome.DEGRADED:
            break
        if rung.gradient_kappa > 0.0 and not (problem.grad and problem.kappa_grad < rung.gradient_kappa):
            continue  # nothing this rung would change
        vector = first_vector if number == 0 and first_vector is not None else settings_vector(problem.settings, rung)
        buffer = warm.buffer if number == 0 and warm is not None else kernels.NO_WARM
        attempt, next_vec, jacobian, smoothed, info, kappa = _attempt(problem, rung, vector, trace, buffer)
        attempts.append(attempt)
        if not (attempt.solved and np.isfinite(next_vec).all()):
            continue
        solution = StepSolution(rung.outcome, rung, tuple(attempts), next_vec, jacobian,
                                smoothed if problem.grad else None, info, kappa)
        if not rung.accept_best:
            return solution
        merit = max(attempt.residual, attempt.complementarity)
        if best is None or merit < best[0]:
            best = (merit, solution)
    if best is not None:
        return dataclasses.replace(best[1], attempts=tuple(attempts))
    where = f"step {problem.step_index}" if problem.step_index is not None else "step"
    first = attempts[0]
    what = ("broke down (singular Newton system or non-finite iterate) after "
            f"{first.iterations} iterations" if first.status == kernels.STATUS_BREAKDOWN
            else f"did not converge in {problem.settings.max_iterations} iterations")
    last = attempts[-1]
    raise SimulationError(
        f"{where}: interior-point solver {what} (residual violation {first.residual:.3g}, complementarity "
        f"{first.complementarity:.3g}, central-path error {first.path_error:.3g}) at kappa={first.failed_kappa:g}; "
        f"{len(attempts) - 1} recovery rungs tried, last ({last.rung.name}): residual {last.residual:.3g}, "
        f"complementarity {last.complementarity:.3g}" + (" [strict mode]" if strict else ""))
