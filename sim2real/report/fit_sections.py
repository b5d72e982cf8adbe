"""Report sections of fits: status and problems first, the method, the parameters against known truth,
residuals, and one section per fit (:func:`fits_blocks`). Each returns the report's blocks (text, tables,
figures) for :func:`~sim2real.report.build.build_report`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from sim2real.report.cells import degraded_steps, describe_tally
from sim2real.report.document import (
    Alert,
    Block,
    Figure,
    Heading,
    Note,
    Paragraph,
    Table,
)
from sim2real.report.figures import (
    FIGURE_PREFIX,
    MAX_RESIDUAL_TRIALS,
    correlation_figure,
    fit_trace_figure,
    residual_figure,
    safe_name,
)
from sim2real.report.fit_tables import (
    FitSummary,
    fit_parameter_rows,
    prediction_rows,
    strong_correlations,
    trial_rms_rows,
    truth_inside,
)


def _fit_status_blocks(fit: FitSummary) -> list[Block]:
    """The fit's status first: red when it did not converge or has problems."""
    if fit.status is None:
        return [Note("The fit file records no status (written before fits reported one): check its stop reason "
                     "and warnings before using the values.")]
    if fit.ok:
        blocks: list[Block] = [Paragraph("Fit status: converged, no problems.")]
    else:
        blocks = [Alert(f"Fit status: {_shout(fit.status)}, {len(fit.problems)} problem(s). Check these before "
                        "using the values:")]
        blocks += [Alert(f"Problem: {problem}") for problem in fit.problems]
    for when in ("start", "final"):
        tally = fit.solver.get(when)
        if tally:
            blocks.append((Alert if degraded_steps(tally) else Paragraph)(
                f"Solver at the {when} values: {describe_tally(tally)}."))
    return blocks


def _shout(status: str) -> str:
    """A status other than ``converged`` in capitals."""
    return status if status == "converged" else status.upper()


def fit_status_lines(fit: FitSummary) -> list[str]:
    """The fit's status for a terminal: one line, then one per problem."""
    if fit.status is None:
        return [f"fit {fit.path}: no status recorded"]
    if fit.ok:
        return [f"fit {fit.path}: converged, no problems"]
    return [f"fit {fit.path}: {_shout(fit.status)}, {len(fit.problems)} problem(s)",
            *(f"  problem: {p}" for p in fit.problems)]


def fit_titles(fits: Sequence[FitSummary]) -> list[str]:
    """One title per fit: the file stem (``servo``, ``fitted``), made distinct with the parent
    directory and then a number when stems repeat."""
    stems = [Path(fit.path).stem or fit.path for fit in fits]
    titles = [stem if stems.count(stem) == 1 else f"{Path(fit.path).parent.name}/{stem}".lstrip("/")
              for fit, stem in zip(fits, stems, strict=True)]
    return [title if titles.count(title) == 1 else f"{title} ({k + 1})" for k, title in enumerate(titles)]


def _method_blocks(fit: FitSummary) -> list[Block]:
    """How the intervals were computed, and what the grid jackknife did to one of them."""
    blocks: list[Block] = []
    if fit.method is not None:
        blocks.append(Paragraph(f"Interval method: {fit.method.strip().lstrip('; ')}."))
    elif fit.ci95:
        blocks.append(Note("The fit file does not name its interval method (data.uncertainty.method)."))
    name = fit.jackknife.get("parameter")
    if name:
        loo = fit.jackknife.get("leave_one_out")
        count = f" ({len(loo)} leave-one-out grid minima)" if isinstance(loo, list) else ""
        if fit.jackknife_widened:
            blocks.append(Paragraph(f"The 95 % interval of {name} was widened by the grid jackknife{count}: its "
                                    "standard deviation and interval are the jackknife's, wider than the fit's own."))
        else:
            blocks.append(Paragraph(f"The grid jackknife of {name}{count} was not wider than the fit's own "
                                    "interval, which is kept."))
    return blocks


def _truth_blocks(fit: FitSummary, truth: Mapping[str, float]) -> list[Block]:
    """An alert naming the parameters whose 95 % interval misses the known truth."""
    misses = []
    for name, value in fit.values.items():
        if name in truth and truth_inside(fit, name, truth[name]) is False:
            low, high = fit.ci95[name]
            misses.append(f"{name} (truth {truth[name]:.5g}, fitted {value:.5g}, interval [{low:.5g}, {high:.5g}])")
    if not misses:
        return []
    return [Alert(f"The known truth lies outside the 95 % interval of: {'; '.join(misses)}.")]


def _residual_blocks(fit: FitSummary, title: str, stem: str) -> list[Block]:
    """Per-trial RMS errors (start → fitted) and the residual norm against time per trial."""
    blocks: list[Block] = []
    header, rows = trial_rms_rows(fit)
    if rows:
        blocks.append(Table(tuple(header), tuple(tuple(r) for r in rows),
                            "Per fitted trial: RMS error at the start → fitted values", css_class="fit-trials"))
    series = fit.residual_series
    figure = residual_figure(series, title) if series else None
    if figure is None:
        blocks.append(Note("The fit file records no residual series against time (data.residual_series: fits "
                           "written before it existed); the residual figure is omitted."))
        return blocks
    group = str(series.get("group", "residual")).replace("_", " ")
    count = len(series.get("trials") or [])
    caption = (f"{title}: norm of the unweighted {group} residual per trial against time, at the start values "
               "(dashed) and the fitted values (solid).")
    blocks.append(Figure(f"{stem}_residuals.png", figure, caption))
    if count > MAX_RESIDUAL_TRIALS:
        blocks.append(Note(f"The residual figure shows the first {MAX_RESIDUAL_TRIALS} of {count} trials"
                           + ("; the table above lists them all." if rows else ".")))
    return blocks


def _fit_blocks(fit: FitSummary, title: str, truth: Mapping[str, float] | None = None) -> list[Block]:
    """One fit's subsection: status first, parameters (with the truth when known), interval method,
    validation, correlations (more than one free parameter), residuals against time, trace."""
    stem = f"{FIGURE_PREFIX}fit_{safe_name(title)}"
    header, rows = fit_parameter_rows(fit, truth)
    blocks: list[Block] = [Heading(f"Fit '{title}'", 3), *_fit_status_blocks(fit), Paragraph(f"From {fit.path}."),
                           Table(tuple(header), tuple(tuple(r) for r in rows),
                                 "Parameters before and after the fit (SI units)", css_class="parameters"),
                           *_method_blocks(fit), *(_truth_blocks(fit, truth) if truth else [])]
    header, rows = prediction_rows(fit)
    if rows:
        blocks += [Paragraph("Prediction of whole trials at the start values → the fitted values: the trials the "
                             "fit used and the held-out ones it never saw (each simulated from its recorded start "
                             "to its end; means over the trials)."),
                   Table(tuple(header), tuple(tuple(r) for r in rows), "Training and validation",
                         css_class="validation")]
    if fit.missing:
        blocks.append(Note(f"The fit file lacks: {', '.join(fit.missing)}; those parts are not shown."))
    for warning in fit.warnings:
        blocks.append(Note(f"Fit warning: {warning}"))
    if fit.extras:
        blocks.append(Table(("item", "value"), tuple((k, str(v)) for k, v in fit.extras.items()), "Fit details",
                            css_class="fit-details"))
    if fit.correlation_names and fit.free_count > 1:
        pairs = strong_correlations(fit)
        blocks.append(Paragraph("Strongly correlated pairs (|r| ≥ 0.8): " + (
            "; ".join(f"{a} / {b}: {r:+.2f}" for a, b, r in pairs) if pairs else "none") + "."))
        figure = correlation_figure(fit.correlation_names, fit.correlation)
        if figure is not None:
            blocks.append(Figure(f"{stem}_correlation.png", figure, f"{title}: correlation of the fitted parameters."))
    blocks += _residual_blocks(fit, title, stem)
    figure = fit_trace_figure(fit.trace)
    if figure is not None:
        first, last = fit.trace[0]["cost"], fit.trace[-1]["cost"]
        blocks += [Paragraph(f"Cost {first:.4g} → {last:.4g} in {len(fit.trace)} recorded iteration(s)."),
                   Figure(f"{stem}_trace.png", figure, f"{title}: fit cost against iteration.")]
    return blocks


def fits_blocks(fits: Sequence[FitSummary], truth: Mapping[str, float] | None) -> list[Block]:
    """The "Fitted parameters" section: one subsection per fit, in the order given."""
    blocks: list[Block] = [Heading("Fitted parameters")]
    if len(fits) > 1:
        blocks.append(Paragraph(f"{len(fits)} fits (e.g. the stages of one identification), each in its own "
                                "subsection below."))
    if truth:
        fitted = {name for fit in fits for name in fit.values}
        unused = sorted(set(truth) - fitted)
        blocks.append(Paragraph("The truth column holds the known true values (e.g. a stand-in's hidden values); "
                                "'truth inside 95 %?' says whether the interval holds it."))
        if unused:
            blocks.append(Note(f"Truth given for parameters no fit frees: {', '.join(unused)}."))
    for fit, title in zip(fits, fit_titles(fits), strict=True):
        blocks += _fit_blocks(fit, title, truth)
    return blocks
