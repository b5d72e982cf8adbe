"""Report tables of a fit: what the report reads of a fit.json (:class:`FitSummary`, :func:`read_fit`), the
fitted parameters with their intervals (against known truth where there is one), training and held-out
prediction errors, strong correlations and per-trial RMS. Pure data in, rows out; lengths formatted in mm,
angles in degrees.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.report.cells import degrees, mm, number_or_none
from sim2real.sysid.files import FitDocument, read_fit_document

FIT_KEYS: tuple[str, ...] = ("values", "std", "ci95", "correlation", "start_values", "trace")
#: fit.json keys shown in their own places (not among the "Fit details").
_SHOWN_KEYS: tuple[str, ...] = (*FIT_KEYS, "warnings", "status", "problems", "solver", "dropped_rows")


@dataclass(frozen=True)
class FitSummary:
    """The parts of a fit.json the report uses; anything absent is empty and listed in ``missing``.

    Attributes
    ----------
    values, std, start_values : dict of str to float
        Fitted values, standard deviations and starting values (SI units).
    ci95 : dict of str to (float, float)
        95 % intervals.
    correlation_names : tuple of str
        Order of the correlation matrix.
    correlation : numpy.ndarray, shape (P, P)
        Parameter correlations (empty (0, 0) if absent).
    trace : tuple of dict
        Iterations, each with at least ``iteration`` and ``cost``.
    warnings : tuple of str
        Warnings carried by the fit (undetermined parameters, bounds).
    extras : dict
        Other scalar information worth showing (stop reason, data used).
    missing : tuple of str
        Expected keys that were absent or unusable.
    status : str or None
        ``"converged"`` / ``"not converged"`` (None in fit files written before statuses).
    problems : tuple of str
        What the fit says must be seen before its numbers are used.
    solver : dict
        Engine outcome tallies at the ``start`` and ``final`` values (dicts or None).
    dropped_rows : int
        Residual rows the fit left out (degraded solver steps).
    prediction : dict
        ``validation.prediction`` of fit.json: whole-trial prediction errors of the training
        and held-out trials at the start and fitted values (empty without held-out trials).
    method : str or None
        How the intervals were computed (``data.uncertainty.method``).
    jackknife : dict
        ``data.uncertainty.grid_jackknife`` (``parameter``, ``std``, ``leave_one_out``, ...) when
        the interval of one parameter was checked against a grid jackknife (empty otherwise).
    free_count : int
        Free unknowns of the fit (tied names count once): ``data.parameter_count``, else the
        size of the correlation matrix, else the number of values.
    residual_series : dict
        ``data.residual_series``: per trial, the residual norm against time at the start and
        fitted values (empty in fit files written before it existed).
    trials : tuple of dict
        ``data.trials``: per trial its name and RMS errors at the start and fitted values.
    """

    path: str
    values: dict[str, float]
    std: dict[str, float]
    ci95: dict[str, tuple[float, float]]
    start_values: dict[str, float]
    correlation_names: tuple[str, ...]
    correlation: np.ndarray
    trace: tuple[dict[str, Any], ...]
    warnings: tuple[str, ...]
    extras: dict[str, Any]
    missing: tuple[str, ...]
    status: str | None = None
    problems: tuple[str, ...] = ()
    solver: dict[str, Any] = field(default_factory=dict)
    dropped_rows: int = 0
    prediction: dict[str, Any] = field(default_factory=dict)
    method: str | None = None
    jackknife: dict[str, Any] = field(default_factory=dict)
    free_count: int = 0
    residual_series: dict[str, Any] = field(default_factory=dict)
    trials: tuple[dict[str, Any], ...] = ()

    @property
    def ok(self) -> bool:
        """Recorded as converged with no problem."""
        return self.status == "converged" and not self.problems

    @property
    def jackknife_widened(self) -> bool:
        """The grid jackknife's interval replaced the fit's for :attr:`jackknife` ``parameter``
        (its standard deviation is the jackknife's; when the fit's was wider it stayed)."""
        name = self.jackknife.get("parameter")
        jk_std, std = number_or_none(self.jackknife.get("std")), self.std.get(str(name))
        return jk_std is not None and std is not None and math.isclose(std, jk_std, rel_tol=1e-9, abs_tol=0.0)


def _section(raw: Any) -> Mapping[str, Any]:
    """``raw`` if it is a mapping (a JSON object), else an empty one."""
    return raw if isinstance(raw, Mapping) else {}


def read_fit(path: str | Path) -> FitSummary:
    """Read a fit.json leniently (:func:`~sim2real.sysid.files.fit_file.read_fit_document`): a field of the wrong type
    is shown as missing, not refused (see :class:`FitSummary`).

    Raises
    ------
    Sim2RealError
        The file cannot be read, is not a fit report, or has no ``values`` mapping.
    """
    unusable: list[str] = []
    return fit_summary(read_fit_document(path, unusable), str(path), unusable)


def fit_summary(document: FitDocument, path: str, unusable: Sequence[str] = ()) -> FitSummary:
    """What the report shows of a fit report (see :class:`FitSummary`); ``path`` names it, ``unusable`` lists
    the fields read as absent because their type was wrong."""
    if not document.values:
        raise Sim2RealError(f"fit file {path} has no 'values' mapping of parameter names to numbers")
    missing = [key for key, value in (("std", document.std), ("start_values", document.start_values),
                                      ("ci95", document.ci95)) if value is None]
    names: tuple[str, ...] = ()
    matrix = np.zeros((0, 0))
    corr = document.correlation
    if corr is not None and len(corr.matrix) == len(corr.names) and all(len(r) == len(corr.names) for r in corr.matrix):
        names = corr.names
        matrix = np.array([[np.nan if v is None else v for v in row] for row in corr.matrix], dtype=float)
        matrix = matrix.reshape(len(names), len(names))
    if not names:
        missing.append("correlation")
    trace = [{**item, "iteration": item.get("iteration", k)} for k, item in enumerate(document.trace)
             if number_or_none(item.get("cost")) is not None]
    if not trace:
        missing.append("trace")
    missing += [key for key in unusable if key not in missing]
    top = {"format": document.format, "stop_reason": document.stop_reason, "params_file": document.params_file,
           **document.others}  # the top-level fields not shown elsewhere (fit.json's order)
    extras = {k: v for k, v in top.items() if k not in _SHOWN_KEYS and isinstance(v, (str, int, float, bool))}
    data, uncertainty = document.data, document.uncertainty
    prediction = (document.validation or {}).get("prediction")
    method, jackknife = uncertainty.get("method"), uncertainty.get("grid_jackknife")
    count = data.get("parameter_count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        count = len(names) if names else len(document.values)
    series, trials = data.get("residual_series"), data.get("trials")
    return FitSummary(
        path, document.values, {k: v for k, v in (document.std or {}).items() if v is not None},
        {k: v for k, v in (document.ci95 or {}).items() if v is not None}, document.start_values or {}, names, matrix,
        tuple(trace), document.warnings, extras, tuple(missing), document.status, document.problems,
        {k: v for k, v in document.solver.items() if isinstance(v, Mapping)}, document.dropped_rows,
        dict(prediction) if isinstance(prediction, Mapping) else {},
        method if isinstance(method, str) and method.strip() else None,
        dict(jackknife) if isinstance(jackknife, Mapping) else {}, count,
        dict(series) if isinstance(series, Mapping) and isinstance(series.get("trials"), list) else {},
        tuple(dict(t) for t in trials if isinstance(t, Mapping)) if isinstance(trials, list) else ())


def _before_after(before: str, after: str) -> str:
    return f"{before} → {after}"


def prediction_rows(fit: FitSummary) -> tuple[list[str], list[list[str]]]:
    """Training and held-out trials side by side: whole-trial prediction errors, start → fitted values.

    Header and rows (one per set of trials): trials, mean final position error (mm), mean yaw
    error (deg), flip agreement, RMS position error over the fit's horizon (mm). No rows when
    the fit had no held-out trials.
    """
    header = ["trials", "count", "final position error (mm)", "yaw error (deg)", "flip agreement",
              "RMS over the fit's horizon (mm)"]
    rows = []
    for label, title in (("training", "fitted on"), ("validation", "held out")):
        block = fit.prediction.get(label)
        if not isinstance(block, Mapping):
            continue
        before = _section(block.get("start"))
        after = _section(block.get("final"))
        rms = _section(block.get("horizon_rms"))
        rms_before = _section(rms.get("start"))
        rms_after = _section(rms.get("final"))
        count = str(after.get("trials", "—"))
        if after.get("failed"):
            count += f" ({after['failed']} failed)"
        rows.append([title, count,
                     _before_after(mm(before.get("final_position_m")), mm(after.get("final_position_m"))),
                     _before_after(degrees(before.get("yaw_deg")), degrees(after.get("yaw_deg"))),
                     _before_after(str(before.get("flip_agreement", "—")), str(after.get("flip_agreement", "—"))),
                     _before_after(mm(rms_before.get("position_m")), mm(rms_after.get("position_m")))])
    return header, rows


def truth_inside(fit: FitSummary, name: str, truth: float) -> bool | None:
    """Whether ``truth`` lies in the 95 % interval of ``name`` (None without an interval)."""
    ci = fit.ci95.get(name)
    return None if ci is None else bool(ci[0] <= truth <= ci[1])


def fit_parameter_rows(fit: FitSummary, truth: Mapping[str, float] | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and rows: parameter, unit, start, fitted, change, std, 95 % interval, and with
    ``truth`` (true values where known: a demo's hidden values, a known-truth test) the truth and
    whether the interval holds it.

    The interval of the parameter a grid jackknife widened is marked ``(grid jackknife)``.
    """
    from sim2real.params import names as registry_names
    from sim2real.params import spec

    known = set(registry_names())
    header = ["parameter", "unit", "before (start)", "after (fitted)", "change", "std", "95 % interval"]
    if truth:
        header += ["truth", "truth inside 95 %?"]
    widened = fit.jackknife.get("parameter") if fit.jackknife_widened else None
    rows = []
    for name, value in fit.values.items():
        unit = spec(name).unit if name in known else "?"
        start = fit.start_values.get(name)
        if start is None and name in known:
            start = spec(name).nominal
        change = "—" if start in (None, 0) else f"{100.0 * (value - start) / abs(start):+.1f} %"
        std = fit.std.get(name)
        ci = fit.ci95.get(name)
        interval = "—" if ci is None else f"[{ci[0]:.5g}, {ci[1]:.5g}]"
        if ci is not None and name == widened:
            interval += " (grid jackknife)"
        row = [name, unit, "—" if start is None else f"{start:.5g}", f"{value:.5g}", change,
               "—" if std is None else f"{std:.3g}", interval]
        if truth:
            true = truth.get(name)
            inside = None if true is None else truth_inside(fit, name, true)
            row += ["—" if true is None else f"{true:.5g}", "—" if inside is None else ("yes" if inside else "no")]
        rows.append(row)
    return header, rows


def strong_correlations(fit: FitSummary, threshold: float = 0.8) -> list[tuple[str, str, float]]:
    """Parameter pairs with ``|correlation| ≥ threshold``, strongest first."""
    pairs = []
    n = len(fit.correlation_names)
    for i in range(n):
        for j in range(i + 1, n):
            r = float(fit.correlation[i, j])
            if math.isfinite(r) and abs(r) >= threshold:
                pairs.append((fit.correlation_names[i], fit.correlation_names[j], r))
    return sorted(pairs, key=lambda p: -abs(p[2]))


#: Residual groups of fit.json ``data.trials`` RMS entries: (column title, factor from SI).
_RMS_GROUPS: tuple[tuple[str, str, float], ...] = (
    ("box_position", "box position (mm)", 1000.0),
    ("box_orientation", "box orientation (deg)", 180.0 / math.pi),
    ("joint_position", "joint position (deg)", 180.0 / math.pi),
    ("joint_velocity", "joint velocity (deg/s)", 180.0 / math.pi),
)


def trial_rms_rows(fit: FitSummary) -> tuple[list[str], list[list[str]]]:
    """Per fitted trial, the RMS unweighted error of each residual group at the start → fitted values
    (fit.json ``data.trials``). No rows when the fit file does not record them."""
    present = [g for g in _RMS_GROUPS
               if any(isinstance(t.get("rms_final"), Mapping) and g[0] in t["rms_final"] for t in fit.trials)]
    header = ["trial", *(f"RMS {title}" for _, title, _ in present)]
    rows = []
    for trial in fit.trials:
        start = _section(trial.get("rms_start"))
        final = _section(trial.get("rms_final"))
        cells = [str(trial.get("name", "?"))]
        for key, _, factor in present:
            a, b = number_or_none(start.get(key)), number_or_none(final.get(key))
            cells.append(_before_after("—" if a is None else f"{a * factor:.3g}",
                                       "—" if b is None else f"{b * factor:.3g}"))
        rows.append(cells)
    return header, rows if present else []
