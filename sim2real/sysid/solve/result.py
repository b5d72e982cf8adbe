"""What a fit produced: :class:`FitResult` (the fit.json object) and its verdicts (:func:`with_verdicts`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sim2real.params import ParameterSet, spec
from sim2real.sysid.files import FIT_FORMAT, FitDocument
from sim2real.sysid.problem import FreeParameters, TrialFailure, param_scale
from sim2real.sysid.solve.starts import start_dependence, unevaluated_starts
from sim2real.sysid.uncertainty import (
    NOT_DETERMINED,
    determination_problems,
    poorly_determined,
)
from sim2real.trials import versions
from sim2real.trials.jsonio import jsonable


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
        Trials used (with their mode, pusher source and solver tally), residual counts,
        horizon, weights, RMS errors at start and end.
    cost_start, cost_final : float
    undetermined : tuple of str
        Names the data do not determine: without a standard deviation, or judged undetermined from
        their interval or measured jackknife by :func:`with_verdicts` (each also a problem line).
    status : str
        ``"converged"`` or ``"not converged"`` (:func:`sim2real.sysid.uncertainty.status.fit_status`).
    problems : tuple of str
        One line each; empty when the fit can be used as it is.
    failures : tuple of TrialFailure
        Trials left out (unreadable, missing inputs, failing at the start values).
    solver : dict
        Engine outcome tallies (``SolveSummary.as_dict()``) at the ``start`` and ``final`` values.
    dropped_rows : int
        Residual rows left out because they depend on degraded solver steps.
    validation : dict or None
        Held-out cost along the fit (``--validate``).
    hard_steps : tuple of (str, HardStep)
        The trial and reproduction record of hard steps met (at most 20 per trial); written
        beside the params file (``<stem>.hard_steps/``) by :func:`sim2real.sysid.files.writeback.write_fit`,
        not in fit.json.
    bounds : dict of str to [float, float]
        The bounds each involved name was fitted within (the registry's, narrowed by ``bounds``),
        in its unit.
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
    status: str = "converged"
    problems: tuple[str, ...] = ()
    failures: tuple[TrialFailure, ...] = ()
    solver: dict[str, Any] = field(default_factory=dict)
    dropped_rows: int = 0
    validation: dict[str, Any] | None = None
    hard_steps: tuple[tuple[str, Any], ...] = field(default=(), repr=False)
    bounds: dict[str, list[float]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Converged, with no problem at all."""
        return self.status == "converged" and not self.problems

    def document(self) -> FitDocument:
        """The fit.json document of this result (the params file's name, which object it holds and the hard
        steps' folder are added by :func:`sim2real.sysid.files.writeback.fit_document`), checked by its reader.

        A field its reader would refuse is left out with a warning rather than lose the fit that was computed.
        """
        unusable: list[str] = []
        document = FitDocument.from_json(jsonable({"format": FIT_FORMAT, **self.to_json()}), "the fit", unusable)
        if not unusable:
            return document
        note = (f"fit.json: {', '.join(unusable)} left out: not of the type its format says (a sim2real bug; "
                "please report it)")
        return dataclasses.replace(document, warnings=(*document.warnings, note))

    def to_json(self) -> dict[str, Any]:
        """The fields of fit.json (:meth:`document` adds the format tag first): ``status`` and ``problems``
        first, then ``values``, ``start_values``, ``std``, ``ci95``, ``correlation``, ``unknowns``, ``trace``,
        ``stop_reason``, ``warnings``, ``data``, ``versions``, ``tied``, ``undetermined``, ``cost``,
        ``failures``, ``solver``, ``dropped_rows``, ``validation``, ``hard_steps`` (their count), ``bounds``."""
        return {
            "status": self.status, "problems": list(self.problems),
            "values": self.values, "start_values": self.start_values, "std": self.std, "ci95": self.ci95,
            "correlation": self.correlation, "unknowns": [u.as_dict() for u in self.free.unknown_list],
            "trace": self.trace, "stop_reason": self.stop_reason,
            "warnings": self.warnings, "data": self.data, "versions": versions(),
            "tied": [list(g) for g in self.free.groups if len(g) > 1],
            "undetermined": list(self.undetermined),
            "cost": {"start": self.cost_start, "final": self.cost_final},
            "failures": [f.as_dict() for f in self.failures],
            "solver": self.solver, "dropped_rows": self.dropped_rows, "validation": self.validation,
            "hard_steps": {"count": len(self.hard_steps)}, "bounds": self.bounds,
        }


def grid_refits(grid: Mapping[str, Any], value: float) -> dict[str, float | None]:
    """The grid jackknife's leave-one-out minima as refits of the fitted ``value``, by trial.

    The grid minimum (a parabola through grid costs) and the Gauss-Newton value it started are two
    estimators of one parameter that can differ by a fraction of the grid step; a jackknife measures
    how far leaving a trial out moves *its* estimator. Each leave-one-out minimum therefore enters
    as ``value + (minimum_k - grid_minimum)``, the move placed at the value the interval is centred on
    (comparing the raw minima with that interval flagged a determined parameter in a CI run: every
    minimum 0.26 mm from the fitted value, all within 0.17 mm of each other).

    Parameters
    ----------
    grid : mapping
        fit.json ``data.uncertainty.grid_jackknife`` (``grid_minimum``, ``leave_one_out``), SI unit.
    value : float
        The fitted value, same unit.
    """
    shift = float(value) - float(grid.get("grid_minimum", value))
    return {f"trial {k + 1}": None if v is None else float(v) + shift
            for k, v in enumerate(grid.get("leave_one_out", []))}


def measured_refits(uncertainty: Mapping[str, Any], name: str, value: float) -> dict[str, float | None]:
    """The measured jackknife of unknown ``name`` as refits of its fitted ``value``, by the trial left out.

    The leave-one-out refits (``refit_jackknife``) when they hold ``name``, else the grid jackknife's
    minima when it is ``name``'s (:func:`grid_refits`), else none: what
    :func:`~sim2real.sysid.uncertainty.status.determination_problems` compares with the interval.

    Parameters
    ----------
    uncertainty : mapping
        fit.json ``data.uncertainty``.
    name : str
        The unknown (its first name).
    value : float
        Its fitted value, SI unit.

    Returns
    -------
    dict of str to float or None
        Empty without a measured jackknife of ``name``.
    """
    refits = uncertainty.get("refit_jackknife") or {}
    grid = uncertainty.get("grid_jackknife") or {}
    if (refits.get("values") or {}).get(name) is not None:
        return dict(zip(refits.get("left_out", []), refits["values"][name], strict=False))
    if grid.get("parameter") == name:
        return grid_refits(grid, value)
    return {}


def with_verdicts(result: FitResult) -> FitResult:
    """``result`` with the verdicts that rest on its standard deviations and intervals formed from them.

    Call it on the final intervals (after any jackknife): each free parameter whose 95 % interval covers
    essentially its bound range, or whose measured leave-one-out refits or grid minima fall outside
    that interval, is undetermined (a problem, listed first, and in ``undetermined``); another start
    that ended as low outside the intervals makes the optimum depend on the start (a problem, next), and
    other starts none of which could be evaluated leave that unchecked (a problem, next:
    :func:`~sim2real.sysid.solve.starts.unevaluated_starts`);
    a parameter whose standard deviation is large against its scale is poorly determined (a warning
    quoting that same standard deviation). Verdicts of an earlier call are replaced, not repeated.
    """
    uncertainty = result.data.get("uncertainty", {})
    determination: list[str] = []
    poorly: list[str] = []
    flagged: list[str] = []
    for unknown in result.free.unknown_list:
        group, name = unknown.reported, unknown.label
        measured = measured_refits(uncertainty, name, result.values[name])
        label = name if len(group) == 1 else "=".join(group)
        entry = spec(unknown.name)
        lines = determination_problems(label, result.values[name], result.ci95.get(name),
                                       result.bounds.get(name, [entry.lower, entry.upper]), measured)
        determination += lines
        if lines:
            flagged += list(group)
        std = result.std.get(name)
        line = poorly_determined(label, std, param_scale(unknown.name, result.values[name]))
        if line is not None:
            poorly.append(line)
    record = result.data.get("starts") or {}
    starts = [line for line in (start_dependence(record, result.ci95), unevaluated_starts(record)[0]) if line]
    earlier = result.data.get("determination", {})
    stale = {*earlier.get("undetermined", []), *earlier.get("starts", [])}
    previous = [p for p in result.problems if p not in stale]
    no_std_lines = [p for p in previous if p.startswith(NOT_DETERMINED)]  # no standard deviation at all
    problems = [*determination, *no_std_lines, *starts, *(p for p in previous if p not in no_std_lines)]
    warnings = [w for w in result.warnings if w not in set(earlier.get("poorly_determined", []))] + poorly
    no_std = [n for g in result.free.unknown_groups for n in g if result.std.get(g[0]) is None]
    undetermined = tuple(dict.fromkeys([*no_std, *flagged]))
    return dataclasses.replace(result, problems=tuple(problems), warnings=warnings, undetermined=undetermined,
                               data={**result.data, "determination": {"undetermined": determination,
                                                                      "starts": starts,
                                                                      "poorly_determined": poorly}})


