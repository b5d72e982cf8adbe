"""Fit simulator parameters to recorded trials: :func:`fit_trials` and its :class:`FitResult`.

Free parameters are registry names; names joined by ``=`` (``box.size_x=box.size_y=box.size_z``)
form one tied unknown that sets all of them (its Jacobian column is the sum of theirs).
Residuals and Jacobians of each trial are computed independently (one task per trial, see
:mod:`sim2real.sysid.tasks`), stacked, and minimised by :func:`levenberg_marquardt`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.params import ParameterSet, spec
from sim2real.sysid.data import TrialData, prepare_trial
from sim2real.sysid.optimizer import LMSettings, Progress, levenberg_marquardt
from sim2real.sysid.residuals import ResidualSpec, TrialResiduals, Weights, available_gradients
from sim2real.sysid.tasks import TrialTask, evaluate_tasks, make_executor
from sim2real.sysid.uncertainty import summarize_uncertainty
from sim2real.trials import TrialRecord, versions


@dataclass(frozen=True)
class FreeParameters:
    """The unknowns of a fit.

    Attributes
    ----------
    groups : tuple of tuple of str
        One tuple of registry names per unknown (more than one name = tied).
    """

    groups: tuple[tuple[str, ...], ...]

    @classmethod
    def parse(cls, items: Sequence[str] | str) -> FreeParameters:
        """From ``["contact.mu_table", "box.size_x=box.size_y"]`` or the comma-separated string.

        Raises
        ------
        Sim2RealError
            Empty list, unknown name (with a suggestion), frozen parameter, or a name given twice.
        """
        if isinstance(items, str):
            items = [part for part in items.split(",")]
        groups: list[tuple[str, ...]] = []
        seen: set[str] = set()
        for item in items:
            if not item.strip():
                continue
            group = tuple(name.strip() for name in item.split("="))
            for name in group:
                entry = spec(name)
                if entry.frozen:
                    raise Sim2RealError(f"parameter '{name}' is a frozen numerical setting and cannot be fitted")
                if entry.kind is not float:
                    raise Sim2RealError(f"parameter '{name}' is an integer setting and cannot be fitted")
                if name in seen:
                    raise Sim2RealError(f"parameter '{name}' is given twice in --free")
                seen.add(name)
            groups.append(group)
        if not groups:
            raise Sim2RealError("--free names no parameter to fit")
        return cls(tuple(groups))

    @property
    def labels(self) -> tuple[str, ...]:
        """One label per unknown: its first name."""
        return tuple(g[0] for g in self.groups)

    @property
    def names(self) -> tuple[str, ...]:
        """Every registry name involved, in order."""
        return tuple(n for g in self.groups for n in g)

    def expand(self, x: np.ndarray) -> dict[str, float]:
        """``{name: value}`` for every involved name from the unknowns ``x`` (p,)."""
        return {n: float(x[i]) for i, g in enumerate(self.groups) for n in g}

    def reduce_columns(self, jacobian: np.ndarray) -> np.ndarray:
        """Columns per name (m, len(names)) → columns per unknown (m, p), summing tied ones."""
        out = np.zeros((jacobian.shape[0], len(self.groups)))
        col = 0
        for i, g in enumerate(self.groups):
            out[:, i] = jacobian[:, col:col + len(g)].sum(axis=1)
            col += len(g)
        return out


def parse_bounds(text: str | None) -> dict[str, tuple[float, float]]:
    """Parse ``"NAME=LO:HI,..."`` into ``{name: (lo, hi)}`` (SI units).

    Raises
    ------
    Sim2RealError
        Malformed entry, unknown name, non-numeric or reversed bounds.
    """
    out: dict[str, tuple[float, float]] = {}
    for part in (p.strip() for p in (text or "").split(",")):
        if not part:
            continue
        name, sep, rest = part.partition("=")
        lo_text, colon, hi_text = rest.partition(":")
        if not sep or not colon:
            raise Sim2RealError(f"--bounds expects NAME=LOWER:UPPER, got '{part}'")
        spec(name.strip())
        try:
            lo, hi = float(lo_text), float(hi_text)
        except ValueError:
            raise Sim2RealError(f"--bounds {name.strip()}: '{rest}' is not LOWER:UPPER numbers") from None
        if not (np.isfinite(lo) and np.isfinite(hi)) or lo >= hi:
            raise Sim2RealError(f"--bounds {name.strip()}: need finite LOWER < UPPER, got {rest}")
        out[name.strip()] = (lo, hi)
    return out


@dataclass(frozen=True)
class FitResult:
    """Everything a fit produced; :meth:`to_json` is the fit.json object.

    Attributes
    ----------
    params : ParameterSet
        Complete fitted parameter set (start values for everything not free).
    start : ParameterSet
    free : FreeParameters
    values, start_values : dict of str to float
        Per involved registry name.
    std : dict of str to float or None
    ci95 : dict of str to list or None
    correlation : dict
        ``{"names": [...], "matrix": [[...]]}`` (one name per unknown, its first).
    trace : list of dict
    stop_reason : str
    warnings : list of str
    data : dict
        Trials used, residual counts, horizon, weights, RMS errors at start and end.
    cost_start, cost_final : float
    """

    params: ParameterSet
    start: ParameterSet
    free: FreeParameters
    values: dict[str, float]
    start_values: dict[str, float]
    std: dict[str, float | None]
    ci95: dict[str, list[float] | None]
    correlation: dict[str, Any]
    trace: list[dict[str, Any]]
    stop_reason: str
    warnings: list[str]
    data: dict[str, Any]
    cost_start: float
    cost_final: float
    undetermined: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """The fit.json object (keys ``values``, ``start_values``, ``std``, ``ci95``, ``correlation``,
        ``trace``, ``stop_reason``, ``warnings``, ``data``, ``versions`` plus ``tied``, ``undetermined``,
        ``cost``)."""
        return {
            "values": self.values, "start_values": self.start_values, "std": self.std, "ci95": self.ci95,
            "correlation": self.correlation, "trace": self.trace, "stop_reason": self.stop_reason,
            "warnings": self.warnings, "data": self.data, "versions": versions(),
            "tied": [list(g) for g in self.free.groups if len(g) > 1],
            "undetermined": list(self.undetermined),
            "cost": {"start": self.cost_start, "final": self.cost_final},
        }


def _param_scale(name: str, value: float) -> float:
    entry = spec(name)
    return max(abs(value), 0.01 * (entry.upper - entry.lower))


def prepare_trials(records: Sequence[TrialRecord], params: ParameterSet, platform: str = "auto") -> list[TrialData]:
    """:func:`prepare_trial` for every record on the grid of ``params['sim.dt']``."""
    if not records:
        raise Sim2RealError("no trials to fit")
    return [prepare_trial(r, float(params["sim.dt"]), platform) for r in records]


def fit_trials(records: Sequence[TrialRecord], start: ParameterSet, free: Sequence[str] | str | FreeParameters,
               horizon: int | None = 1, weights: Weights | None = None, mode: str = "auto",
               bounds: Mapping[str, tuple[float, float]] | None = None, settings: LMSettings | None = None,
               workers: int = 1, platform: str = "auto", sources: Sequence[str] | None = None,
               progress: Progress | None = None,
               log: Callable[[str], None] | None = None) -> FitResult:
    """Fit the free parameters to recorded trials by Gauss-Newton / Levenberg-Marquardt.

    Parameters
    ----------
    records : sequence of TrialRecord
        Trials (arm pushes and/or box-only recordings such as cube tosses).
    start : ParameterSet
        Start values; parameters not free stay at these values.
    free : sequence of str, str or FreeParameters
        Names to fit; ``a=b`` ties names into one unknown.
    horizon : int or None
        Teacher-forced segment length in steps (1 = one-step), or None for whole trials.
    weights : Weights, optional
        Residual group weights (default :class:`Weights`).
    mode : str
        Whole arm trials: ``"auto"``, ``"commands"`` or ``"closed"``.
    bounds : mapping, optional
        ``{name: (lower, upper)}`` narrowing the registry bounds of free names.
    settings : LMSettings, optional
    workers : int
        Processes evaluating trials in parallel (1 = in this process).
    platform : str
        Recording compared against: ``"real"``, ``"sim"`` or ``"auto"``.
    sources : sequence of str, optional
        Where each record came from (paths), recorded in ``data``.
    progress : callable, optional
        Called with each optimizer :class:`~sim2real.sysid.optimizer.TraceEntry`.
    log : callable, optional
        Receives one-line progress messages.

    Returns
    -------
    FitResult

    Raises
    ------
    Sim2RealError
        Bad free names, bounds excluding the start, a parameter without gradient for some
        trial, trials lacking needed topics, or a simulation failure.
    """
    free_set = free if isinstance(free, FreeParameters) else FreeParameters.parse(free)
    spec_ = ResidualSpec(horizon=horizon, weights=weights or Weights(), mode=mode)
    settings = settings or LMSettings()
    bounds = dict(bounds or {})
    for name in bounds:
        if name not in free_set.names:
            raise Sim2RealError(f"--bounds names '{name}', which is not a free parameter")
    warnings: list[str] = []
    # Tied names start from the first name's value.
    tie_values: dict[str, float] = {}
    for group in free_set.groups:
        first = float(start[group[0]])
        if any(float(start[n]) != first for n in group[1:]):
            warnings.append(f"tied parameters {', '.join(group)} started from different values; "
                            f"all start at {group[0]} = {first:g}")
        tie_values.update({n: first for n in group})
    start = start.replace(tie_values)
    x0 = np.array([float(start[g[0]]) for g in free_set.groups])
    lower, upper = np.empty(len(x0)), np.empty(len(x0))
    for i, group in enumerate(free_set.groups):
        lo = max(spec(n).lower for n in group)
        hi = min(spec(n).upper for n in group)
        for n in group:
            if n in bounds:
                lo, hi = max(lo, bounds[n][0]), min(hi, bounds[n][1])
        if not lo <= x0[i] <= hi:
            raise Sim2RealError(f"bounds [{lo:g}, {hi:g}] of '{group[0]}' exclude its start value {x0[i]:g}")
        lower[i], upper[i] = lo, hi
    data = prepare_trials(records, start, platform)
    for trial in data:
        available = available_gradients(trial.kind, spec_.horizon)
        missing = [n for n in free_set.names if n not in available]
        if missing:
            raise Sim2RealError(f"trial '{trial.name}' ({trial.kind} trial, horizon {spec_.label}): no simulator "
                                f"gradient for {', '.join(missing)}")
        if trial.kind == "arm" and spec_.horizon is not None and trial.command is None and any(
                n.startswith("arm.") for n in free_set.names):
            warnings.append(f"trial '{trial.name}' has no recorded joint commands: it gives no servo residuals")

    names = free_set.names
    per_trial: list[TrialResiduals] = []

    with make_executor(workers) as executor:
        def evaluate(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            params = start.replace(free_set.expand(x))
            tasks = [TrialTask(trial, params, names, spec_) for trial in data]
            results = evaluate_tasks(executor, tasks)
            per_trial[:] = results
            r = np.concatenate([res.residuals for res in results])
            J = np.concatenate([res.jacobian for res in results])  # type: ignore[misc]
            return r, free_set.reduce_columns(J)

        def report(entry: Any) -> None:
            if progress is not None:
                progress(entry)
            if log is not None:
                mark = "" if entry.accepted else " (rejected)"
                log(f"iteration {entry.iteration:2d}: cost {entry.cost:.6g}  step {entry.step_norm:.3g}  "
                    f"damping {entry.damping:.3g}{mark}")

        if log is not None:
            log(f"fitting {len(free_set.groups)} parameter(s) to {len(data)} trial(s), horizon {spec_.label}, "
                f"{workers} worker(s)")
        start_results: list[TrialResiduals] = []
        first_eval = True

        def evaluate_first(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            nonlocal first_eval
            out = evaluate(x)
            if first_eval:
                start_results.extend(per_trial)
                first_eval = False
            return out

        typical = np.array([_param_scale(g[0], float(v)) for g, v in zip(free_set.groups, x0, strict=True)])
        result = levenberg_marquardt(evaluate_first, x0, lower, upper, settings, report, typical)
        # The last evaluation may be a rejected step: recompute the per-trial rows at the solution.
        final_results = [TrialResiduals(p.name, p.residuals, None, p.groups) for p in per_trial]
        if not np.array_equal(np.concatenate([p.residuals for p in per_trial]), result.residuals):
            params_final = start.replace(free_set.expand(result.x))
            final_results = evaluate_tasks(executor, [TrialTask(t, params_final, (), spec_) for t in data])

    labels = free_set.labels
    scale = np.array([_param_scale(g[0], float(v)) for g, v in zip(free_set.groups, result.x, strict=True)])
    unc = summarize_uncertainty(labels, result.x, result.jacobian, result.residuals, result.loss_weights,
                                lower, upper, scale, settings.null_tolerance)
    fitted = start.replace(free_set.expand(result.x))
    values = free_set.expand(result.x)
    start_values = free_set.expand(x0)
    std = {n: unc.std[g[0]] for g in free_set.groups for n in g}
    ci95 = {n: unc.ci95[g[0]] for g in free_set.groups for n in g}
    undetermined = tuple(n for g in free_set.groups if g[0] in unc.undetermined for n in g)
    sources = list(sources) if sources is not None else [None] * len(data)
    trials_info = []
    for trial, src, first, last in zip(data, sources, start_results, final_results, strict=True):
        trials_info.append({
            "name": trial.name, "source": src, "kind": trial.kind, "steps": trial.steps, "dt": trial.dt,
            "residuals": first.counts(), "rms_start": first.rms(spec_.weights), "rms_final": last.rms(spec_.weights),
        })
    data_info = {
        "trials": trials_info, "horizon": spec_.label, "mode": mode, "platform": platform,
        "weights": spec_.weights.as_dict(), "residual_count": int(result.residuals.shape[0]),
        "parameter_count": len(free_set.groups), "evaluations": result.evaluations,
        "loss": settings.loss, "residual_std": unc.residual_std,
        "jacobian": "implicit simulator gradients (engine IFT, servo and PD analytic), forward-mode chained",
    }
    return FitResult(
        params=fitted, start=start, free=free_set, values=values, start_values=start_values, std=std, ci95=ci95,
        correlation=unc.correlation, trace=[e.as_dict(labels) for e in result.trace],
        stop_reason=result.stop_reason, warnings=warnings + list(unc.warnings), data=data_info,
        cost_start=float(result.trace[0].cost), cost_final=float(result.cost), undetermined=undetermined,
    )
