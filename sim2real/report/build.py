"""Assemble the sim-vs-real report from run directories (and optionally a fit.json) and write it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sim2real.errors import Sim2RealError
from sim2real.filemodes import staging_dir
from sim2real.report.camera import camera_sentence, camera_summary
from sim2real.report.cells import degraded_steps, describe_tally, solver_tallies
from sim2real.report.design import design_blocks
from sim2real.report.document import (
    Alert,
    Block,
    Figure,
    Heading,
    Note,
    Paragraph,
    Table,
    render_html,
    render_markdown,
    render_text_table,
)
from sim2real.report.figures import (
    FIGURE_PREFIX,
    box_motion_figure,
    command_figure,
    final_distance_figure,
    joint_tracking_figure,
    safe_name,
)
from sim2real.report.fit_sections import fit_status_lines, fits_blocks
from sim2real.report.fit_tables import FitSummary, read_fit
from sim2real.report.objects import object_blocks
from sim2real.report.pairing import Pairing, pair_runs
from sim2real.report.prediction_spread import prediction_spread_blocks
from sim2real.report.spread import spread_blocks
from sim2real.report.tables import (
    ExperimentRow,
    ExperimentTable,
    comparison_rows_text,
    comparison_sentence,
    experiment_header,
    experiment_rows_text,
    experiment_summary_text,
    experiment_table,
    is_standard_push,
    side_by_side_rows_text,
    trial_outcomes,
)
from sim2real.sysid.design.record import read_design_record
from sim2real.trials import TrialRecord, read_run, read_run_meta
from sim2real.trials.coverage import starved_platforms
from sim2real.trials.scene_checks import flagged_trials, scene_problems

REPORT_HTML = "report.html"
REPORT_MD = "report.md"
#: Manifest of the files a report wrote (JSON ``{"files": [...]}``): what a later report may replace.
REPORT_MANIFEST = ".sim2real-report.json"


@dataclass(frozen=True)
class ReportPaths:
    """What :func:`build_report` wrote and computed.

    Attributes
    ----------
    html, markdown : pathlib.Path
        ``report.html`` (self-contained) and ``report.md``.
    figures : tuple of pathlib.Path
        PNG files next to report.md.
    tables : tuple of ExperimentTable
        The experiment table of each run; its properties hold the statistics over complete trials:
        ``mean_final_error_xy_m`` / ``mean_final_error_m`` (sim-vs-real final position error in
        the table plane / 3-D, m), ``mean_yaw_error_deg``, ``mean_path_rms_m``, ``flip_agreement``,
        and ``mean_gap_m`` / ``max_gap_m``: the final-distance gap along x of the standard pushes
        (None in a run without them, e.g. imported probe pushes).
    text : str
        The experiment table(s) and summary as plain text, for a terminal.
    fit_status : tuple of str
        With fits: each fit's status line and one line per problem (empty without a fit).
    fit_ok : bool or None
        With fits: every fit converged with no problem (None without a fit).
    fits : tuple of FitSummary
        The fits shown, in the order given.
    pairs : tuple of (str, str, str)
        The runs compared as before and after: ``(before label, after label, why)``
        (:mod:`sim2real.report.pairing`); empty when no two runs pair.
    """

    html: Path
    markdown: Path
    figures: tuple[Path, ...]
    tables: tuple[ExperimentTable, ...]
    text: str
    fit_status: tuple[str, ...] = ()
    fit_ok: bool | None = None
    fits: tuple[FitSummary, ...] = ()
    pairs: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class _Run:
    label: str
    path: Path
    trials: tuple[TrialRecord, ...]
    run_json: dict  # the run's run.json (mode, mirror, ...), not a trial's metadata


def _labels(run_dirs: Sequence[Path], labels: Sequence[str] | None) -> list[str]:
    if labels is not None:
        cleaned = [str(label).strip() for label in labels]
        if len(cleaned) != len(run_dirs):
            raise Sim2RealError(f"got {len(cleaned)} label(s) for {len(run_dirs)} run director(ies); "
                                "give one label per run")
        if any(not label for label in cleaned) or len(set(cleaned)) != len(cleaned):
            raise Sim2RealError(f"labels must be non-empty and distinct, got {', '.join(cleaned)}")
        return cleaned
    names = [p.resolve().name or str(p) for p in run_dirs]
    if len(set(names)) == len(names):
        return names
    return [f"{name} ({k + 1})" for k, name in enumerate(names)]


def _platform_summary(trials: Sequence[TrialRecord]) -> str:
    counts = {ns: sum(1 for t in trials if ns in t.platforms) for ns in ("real", "sim")}
    return ", ".join(f"{ns} in {n}" for ns, n in counts.items() if n) or "none"


def _pairing_blocks(runs: Sequence[_Run], pairing: Pairing) -> list[Block]:
    """What is compared with what, and why (or why not)."""
    blocks: list[Block] = []
    for pair in pairing.pairs:
        blocks.append(Paragraph(f"Before/after: '{runs[pair.after].label}' is compared with "
                                f"'{runs[pair.before].label}' ({pair.reason})."))
    if pairing.why:
        blocks.append(Note(pairing.why))
    return blocks


def _input_blocks(runs: Sequence[_Run], fits: Sequence[FitSummary]) -> list[Block]:
    rows = []
    for run in runs:
        incomplete = sum(1 for t in run.trials if not t.complete)
        rows.append((run.label, str(run.path), str(len(run.trials)), _platform_summary(run.trials),
                     str(run.run_json.get("mode", "—")), str(run.run_json.get("mirror", "—")),
                     str(incomplete) if incomplete else "0"))
    blocks: list[Block] = [
        Heading("Inputs"),
        Table(("run", "directory", "trials", "platforms (trials)", "mode", "mirror", "incomplete"),
              tuple(rows), css_class="inputs"),
    ]
    for run in runs:  # every flagged trial, also those past --max-trial-figures
        flagged = [f"{name} ({'; '.join(problems)})" for name, problems in flagged_trials(run.trials)]
        if flagged:
            blocks.append(Alert(f"Run '{run.label}': {len(flagged)} trial(s) imported with --force although their "
                                f"scene is not physical: {', '.join(flagged)}."))
    for run in runs:
        camera = camera_summary(run.label, run.trials)
        if camera is not None:
            blocks.append(Alert(camera[0]) if camera[1] else Paragraph(camera[0]))
    kinds = {ns for run in runs for t in run.trials for ns in t.platforms}
    if kinds == {"real"}:
        blocks.append(Note("Real recordings only: there is nothing simulated to compare with; sim columns are empty."))
    elif kinds == {"sim"}:
        blocks.append(Note("Simulated recordings only: there is no real recording to compare with; real columns "
                           "are empty."))
    elif not kinds:
        blocks.append(Note("The trials hold no platform data at all."))
    if not fits:
        blocks.append(Note("No fit file given (--fit): the parameter, correlation and fit-trace sections are "
                           "omitted."))
    return blocks


def _solver_blocks(runs: Sequence[_Run]) -> list[Block]:
    """An alert naming the trials with degraded solver steps, per run and platform."""
    blocks: list[Block] = []
    for run in runs:
        hits = [f"{t.name} ({ns}: {degraded_steps(tally)})" for t in run.trials
                for ns, tally in solver_tallies(t).items() if degraded_steps(tally)]
        if hits:
            blocks.append(Alert(f"Run '{run.label}': degraded solver steps (accepted at a relaxed central-path "
                                f"value or as the solver's best iterate) in {len(hits)} trial(s): {', '.join(hits)}. "
                                "Their outcomes are less exact; reproduction files are in <trial>/hard_steps/."))
    return blocks


def _parameter_blocks(runs: Sequence[_Run]) -> list[Block]:
    """Simulator parameters recorded in trial.json (first trial of each run) that differ from nominal
    or between runs."""
    from sim2real.params import names as registry_names
    from sim2real.params import spec

    recorded = [run.trials[0].info.params if run.trials else {} for run in runs]
    blocks: list[Block] = [Heading("Simulator parameters")]
    if not any(recorded):
        return [*blocks, Note("The trials record no simulator parameters (trial.json 'params').")]
    known = set(registry_names())
    rows = []
    for name in sorted({n for params in recorded for n in params}):
        values = [params.get(name) for params in recorded]
        nominal = spec(name).nominal if name in known else None
        if nominal is not None and all(v == nominal for v in values):  # 1 == 1.0: types may differ
            continue
        rows.append((name, spec(name).unit if name in known else "?", "—" if nominal is None else f"{nominal:.5g}",
                     *("—" if v is None else (f"{v:.5g}" if isinstance(v, (int, float)) else str(v))
                       for v in values)))
    if not rows:
        return [*blocks, Paragraph("All recorded parameters are at their nominal values.")]
    header = ("parameter", "unit", "nominal", *(f"{run.label}" for run in runs))
    return [*blocks, Table(header, tuple(rows), "Parameters that differ from nominal (first trial of each run)",
                           css_class="run-parameters")]


#: What the experiment table's columns mean (the report's paragraph above the tables).
EXPERIMENT_EXPLANATION = (
    "Per trial, sim against real: the final position error, the distance between the sim and the real box "
    "centre at the end of the trial, in the table plane (final error xy, mm: base x and y) and in 3-D "
    "(mm); the yaw error, the difference of the two boxes' turns about the vertical since their start "
    "(deg); the path RMS, the root-mean-square 3-D distance between the two box centres over the time "
    "both platforms recorded the box (mm); and whether the box flipped (the face it rests on changed) on "
    "each platform and whether they agree. For the standard push along x from the arm base (the "
    "experiment's trials, in the form of Table IV of the Dojo paper) the start distance, both final "
    "distances along x from the arm base and their gap |sim − real| are shown too (cm); for pushes in other "
    "directions (recordings imported from another lab) x alone says little and they are left empty.")


def _experiment_blocks(tables: Sequence[ExperimentTable], runs: Sequence[_Run], pairing: Pairing) -> list[Block]:
    blocks: list[Block] = [Heading("Experiment table"), Paragraph(EXPERIMENT_EXPLANATION)]
    for table in tables:
        caption = f"Run '{table.label}'" if len(tables) > 1 else "Sim vs real"
        blocks.append(Table(experiment_header(table), tuple(tuple(r) for r in experiment_rows_text(table)), caption,
                            css_class="experiment"))
        blocks.append(Paragraph(experiment_summary_text(table)))
        blocks += [Note(note) for note in table.notes]
    blocks += object_blocks(tables)
    figure = final_distance_figure(tables)
    if figure is not None:
        blocks.append(Figure(f"{FIGURE_PREFIX}final_distance.png", figure,
                             "Final box distance against start distance along x (cm), real and sim "
                             "(standard pushes)."))
    for pair in pairing.pairs:
        paired = [tables[pair.before], tables[pair.after]]
        header, rows = comparison_rows_text(paired)
        blocks += [Heading(f"{paired[0].label} vs {paired[1].label} (before vs after)"),
                   Paragraph(f"Compared as before and after: {pair.reason}."),
                   Table(tuple(header), tuple(tuple(r) for r in rows), "Sim-vs-real errors, before and after",
                         css_class="comparison"),
                   Paragraph(comparison_sentence(paired))]
    if pairing.unpaired:
        header, rows = side_by_side_rows_text(tables)
        blocks += [Heading("Runs side by side"), Note(pairing.why),
                   Table(tuple(header), tuple(tuple(r) for r in rows), "Sim-vs-real errors per run (no before/after)",
                         css_class="side-by-side")]
    return blocks


def _outcome_sentence(ns: str, outcome: dict, standard_push: bool = True) -> str:
    """One platform's outcome in words, tolerant of missing keys: the final x distance (standard push)
    or the final position in the table plane (any other push), yaw, tilt, flip, touch."""
    position = outcome.get("final_position_m")
    if standard_push and outcome.get("final_distance_m") is not None:
        parts = [f"final {100 * float(outcome['final_distance_m']):.1f} cm along x"]
    elif isinstance(position, (list, tuple)) and len(position) == 3:
        parts = [f"final at x {100 * float(position[0]):.1f} cm, y {100 * float(position[1]):.1f} cm"]
    else:
        return f"{ns}: no outcome ({outcome.get('error', 'not recorded')})"
    if outcome.get("yaw_deg") is not None:
        parts.append(f"yaw {float(outcome['yaw_deg']):.1f}°")
    if outcome.get("max_tilt_deg") is not None:
        parts.append(f"max tilt {float(outcome['max_tilt_deg']):.1f}°")
    if isinstance(outcome.get("flipped"), bool):
        parts.append("flipped" if outcome["flipped"] else "not flipped")
    elif outcome.get("planar") is True:
        parts.append("tilt and flip unknown (planar recording)")
    if isinstance(outcome.get("touched"), bool):
        parts.append("touched" if outcome["touched"] else "not touched")
    return f"{ns}: " + ", ".join(parts)


def _error_sentence(row: ExperimentRow) -> str | None:
    """The row's sim-vs-real errors in words (None when it has none)."""
    if row.final_error_xy_m is None:
        return None
    text = f"Sim vs real: final position error {1000 * row.final_error_xy_m:.1f} mm in the table plane"
    if row.final_error_m is not None:
        text += f" ({1000 * row.final_error_m:.1f} mm in 3-D)"
    if row.yaw_error_deg is not None:
        text += f", yaw error {row.yaw_error_deg:.1f}°"
    if row.path_rms_m is not None:
        text += f", path RMS {1000 * row.path_rms_m:.1f} mm"
    if row.real_source is not None:
        text += f" (real from run '{row.real_source}')"
    return text + "."


def has_arm_data(trial: TrialRecord) -> bool:
    """Whether the trial recorded the arm: joint states on a platform, joint commands or a reference.

    A probe push imported from another lab has none of them; its report shows no joint figures.
    """
    return trial.reference is not None or any(
        series is not None and len(series) > 0
        for platform in trial.platforms.values() for series in (platform.joint_states, platform.joint_command))


def _trial_blocks(runs: Sequence[_Run], tables: Sequence[ExperimentTable], max_trial_figures: int) -> list[Block]:
    blocks: list[Block] = [Heading("Trials")]
    for k, (run, table) in enumerate(zip(runs, tables, strict=True)):
        shown = run.trials[:max_trial_figures]
        rows = {row.trial: row for row in table.rows}
        if len(runs) > 1:
            blocks.append(Heading(f"Run '{run.label}'", 3))
        if len(run.trials) > len(shown):
            blocks.append(Note(f"Figures are shown for the first {len(shown)} of {len(run.trials)} trials of run "
                               f"'{run.label}' (--max-trial-figures)."))
        for trial in shown:
            blocks.append(Heading(f"{trial.name}" + ("" if len(runs) == 1 else f" ({run.label})"), 4))
            outcomes = trial_outcomes(trial)
            standard = is_standard_push(trial)
            facts = [_outcome_sentence(ns, outcome, standard) for ns, outcome in outcomes.items()]
            if facts:
                blocks.append(Paragraph("; ".join(facts) + "."))
            errors = _error_sentence(rows[trial.name]) if trial.name in rows else None
            if errors:
                blocks.append(Paragraph(errors))
            if not trial.complete:
                reason = trial.info.note or "interrupted"
                blocks.append(Note(f"This trial was recorded incomplete ({reason}); the data end where the "
                                   "recording stopped. It is kept out of the means and maxima and the flip agreement."))
            for ns, description in starved_platforms(trial.meta).items():
                blocks.append(Alert(f"The {ns} control loop was starved during this trial ({description}): its "
                                    "push is not the one the PD law describes."))
            for problem in scene_problems(trial.meta):
                blocks.append(Alert(f"Imported with --force although its scene is not physical: {problem}."))
            camera = camera_sentence(trial)
            if camera is not None:
                blocks.append(Alert(camera[0]) if camera[1] else Paragraph(camera[0]))
            tallies = solver_tallies(trial)
            if tallies:
                text = "Solver: " + "; ".join(f"{ns} {describe_tally(t)}" for ns, t in tallies.items()) + "."
                blocks.append(Alert(text) if any(degraded_steps(t) for t in tallies.values()) else Paragraph(text))
            stem = f"{FIGURE_PREFIX}{k}_{safe_name(trial.name)}"
            arm = has_arm_data(trial)
            missing = []
            figures: list[tuple[str, Callable[[TrialRecord, str], bytes | None], str, str]] = [
                ("box", box_motion_figure, "box path (top view) and tilt against time", "box poses")]
            if arm:  # a probe push has no arm: no joint figures, and no joint data to call missing
                figures += [("joints", joint_tracking_figure, "joint positions: reference vs real vs sim",
                             "joint states"),
                            ("commands", command_figure, "PD joint-velocity command streams", "joint commands")]
            for suffix, make, caption, what in figures:
                png = make(trial, run.label if len(runs) > 1 else "")
                if png is None:
                    missing.append(what)
                else:
                    blocks.append(Figure(f"{stem}_{suffix}.png", png, f"{trial.name}: {caption}."))
            for ns in ("real", "sim"):
                if ns not in trial.platforms:
                    missing.append(f"{ns} platform")
            if not arm:
                blocks.append(Paragraph("No arm data in this trial (no joint states, joint commands or reference: "
                                        "e.g. a probe push); joint figures are not drawn."))
            if missing:
                blocks.append(Note(f"Not recorded in this trial: {', '.join(missing)}."))
    return blocks


def _previous_outputs(out_dir: Path) -> set[str]:
    """Names of the files the previous report in ``out_dir`` wrote (its manifest), if any."""
    import json

    try:
        names = json.loads((out_dir / REPORT_MANIFEST).read_text(encoding="utf-8")).get("files", [])
    except (OSError, ValueError, AttributeError):
        return set()
    return {str(name) for name in names if isinstance(name, str) and "/" not in name and name not in ("", ".", "..")}


def _write_outputs(out_dir: Path, html_text: str, md_text: str, figures: Sequence[Figure]) -> list[Path]:
    """Write the report into ``out_dir`` through a temporary directory.

    Only files this tool wrote are ever replaced or removed: the previous report's files (listed
    in its manifest, ``.sim2real-report.json``) that this report does not write again are removed;
    any other existing file with a name this report needs is an error, before anything is written.
    """
    import json

    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise Sim2RealError(f"output {out_dir} exists and is not a directory")
    names = [REPORT_HTML, REPORT_MD, *(f.file_name for f in figures)]
    previous = _previous_outputs(out_dir) if out_dir.is_dir() else set()
    foreign = [n for n in names if (out_dir / n).exists() and n not in previous]
    if foreign:
        raise Sim2RealError(f"output {out_dir} already has {foreign[0]}, which no sim2real report wrote; "
                            f"not replacing it (choose another output)", option="out")
    parent = out_dir.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = staging_dir(parent, prefix=f".{out_dir.name}.", suffix=".partial")  # the umask's mode, not 0700
    try:
        (tmp / REPORT_HTML).write_text(html_text, encoding="utf-8")
        (tmp / REPORT_MD).write_text(md_text, encoding="utf-8")
        for figure in figures:
            (tmp / figure.file_name).write_bytes(figure.png)
        (tmp / REPORT_MANIFEST).write_text(json.dumps({"files": names}) + "\n", encoding="utf-8")
        if not out_dir.exists():
            os.rename(tmp, out_dir)
        else:
            for stale in sorted(previous - set(names)):  # the previous report's own files only
                (out_dir / stale).unlink(missing_ok=True)
            for item in tmp.iterdir():
                os.replace(item, out_dir / item.name)
            tmp.rmdir()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return [out_dir / f.file_name for f in figures]


def build_report(run_dirs: Sequence[str | Path], out_dir: str | Path,
                 fit: str | Path | Sequence[str | Path] | None = None,
                 labels: Sequence[str] | None = None, max_trial_figures: int = 10,
                 title: str = "sim2real: sim-vs-real report",
                 truth: Mapping[str, float] | None = None, sweep: str | Path | None = None,
                 before: str | None = None, after: str | None = None,
                 design: str | Path | None = None) -> ReportPaths:
    """Write ``report.html`` (self-contained) and ``report.md`` with PNG figures into ``out_dir``.

    Parameters
    ----------
    run_dirs : sequence of path
        Run directories (one trial per sub-directory). With two or more, runs are compared as
        before and after only where they pair by label or by what they record, never by their
        order (:mod:`sim2real.report.pairing`); the others are shown side by side, and the report
        says why. An *after* run without real recordings borrows the real outcomes of its *before*
        run, matched by trial name or start distance.
    out_dir : path
        Created if missing; an existing report there is replaced.
    fit : path or sequence of paths, optional
        One fit.json or several (e.g. the stages of one identification: ``servo.json``,
        ``fitted.json``), each shown in its own subsection titled by its file stem (keys
        ``values``, ``std``, ``ci95``, ``correlation``, ``start_values``, ``trace``,
        ``data.uncertainty``, ``data.residual_series``; read tolerantly, missing parts are
        named in the report).
    labels : sequence of str, optional
        One label per run (default: directory names).
    max_trial_figures : int
        Per run, trials with per-trial figures (the table always lists all trials).
    title : str
        Title of the report.
    truth : mapping of str to float, optional
        Known true parameter values (a stand-in's hidden values, a known-truth test): the
        parameter tables get a truth column and whether the 95 % interval holds it.
    sweep : path, optional
        A directory written by ``sim2real sweep``: its predicted outcome spread per start
        distance beside the real outcomes of the first run with real data
        (:mod:`sim2real.report.spread`).
    before, after : str, optional
        Labels of two runs to compare as before and after (both or neither); without them the
        pairs come from the labels and the runs' records.
    design : path, optional
        A design.json written by ``sim2real design``: its forecast intervals beside the fits' achieved ones and
        how many designed pushes the runs hold (:mod:`sim2real.report.design`).

    Returns
    -------
    ReportPaths

    Raises
    ------
    Sim2RealError
        No run directory, unreadable run, fit file or sweep table, wrong number of labels, a
        non-finite truth value or truth without a fit, a ``before``/``after`` that is no run's
        label. Nothing is written then.
    """
    if not run_dirs:
        raise Sim2RealError("give at least one run directory")
    if max_trial_figures < 0:
        raise Sim2RealError(f"max trial figures must be >= 0, got {max_trial_figures}")
    paths = [Path(p) for p in run_dirs]
    names = _labels(paths, labels)
    runs = [_Run(label, path, tuple(read_run(path)), read_run_meta(path)) for label, path in zip(names, paths,
                                                                                                strict=True)]
    fit_paths = [] if fit is None else [fit] if isinstance(fit, (str, os.PathLike)) else list(fit)
    fits = [read_fit(path) for path in fit_paths]
    design_record = read_design_record(design) if design is not None else None
    truth = _check_truth(truth, bool(fits))
    pairing = pair_runs([run.label for run in runs], [run.trials for run in runs], fits, before, after)
    with_real = [run for run in runs if any("real" in t.platforms for t in run.trials)]
    tables = []
    for k, run in enumerate(runs):
        source = pairing.before_of(k)  # an after run without real data borrows its before run's
        donor = runs[source] if source is not None and run not in with_real and runs[source] in with_real else None
        tables.append(experiment_table(run.label, run.trials, (donor.label, donor.trials) if donor else None))
    blocks: list[Block] = []
    blocks += _input_blocks(runs, fits)
    blocks += _pairing_blocks(runs, pairing)
    blocks += _solver_blocks(runs)
    blocks += _experiment_blocks(tables, runs, pairing)
    blocks += [b for run in runs for b in prediction_spread_blocks(run.label, run.path)]
    blocks += _parameter_blocks(runs)
    if fits:
        blocks += fits_blocks(fits, truth)
    if design_record is not None:
        blocks += design_blocks(design_record, fits, [t for run in runs for t in run.trials])
    if sweep is not None:
        blocks += _sweep_blocks(sweep, next((t for t, run in zip(tables, runs, strict=True) if run in with_real),
                                            None))
    blocks += _trial_blocks(runs, tables, max_trial_figures)
    figures = [b for b in blocks if isinstance(b, Figure)]
    out = Path(out_dir)
    figure_paths = _write_outputs(out, render_html(title, blocks), render_markdown(title, blocks), figures)
    return ReportPaths(out / REPORT_HTML, out / REPORT_MD, tuple(figure_paths), tuple(tables),
                       _console_text(tables, pairing), tuple(line for f in fits for line in fit_status_lines(f)),
                       all(f.ok for f in fits) if fits else None, tuple(fits),
                       tuple((runs[p.before].label, runs[p.after].label, p.reason) for p in pairing.pairs))


def _console_text(tables: Sequence[ExperimentTable], pairing: Pairing) -> str:
    """The report in a few lines for the console: each run's experiment table, then each before/after pair."""
    text_parts = []
    for table in tables:
        text_parts += [f"[{table.label}]", render_text_table(experiment_header(table), experiment_rows_text(table)),
                       experiment_summary_text(table)]
    for pair in pairing.pairs:
        text_parts.append(comparison_sentence([tables[pair.before], tables[pair.after]]) + f" ({pair.reason})")
    if pairing.why:
        text_parts.append(pairing.why)
    return "\n".join(text_parts)


def _sweep_blocks(sweep: str | Path, real_table: ExperimentTable | None) -> list[Block]:
    """The sweep's predicted spread beside the first run with real trials (``real_table``, None: no such run)."""
    if real_table is None:
        return [Note(f"--sweep {sweep}: no run has real trials to compare the predicted spread with")]
    return spread_blocks(sweep, real_table)


def _check_truth(truth: Mapping[str, float] | None, have_fit: bool) -> dict[str, float]:
    """Truth values as floats; raises on a non-finite value or truth without a fit."""
    import math

    if not truth:
        return {}
    if not have_fit:
        raise Sim2RealError("truth values are compared with a fit's intervals: give a fit file too", option="fit")
    out = {}
    for name, value in truth.items():
        number = float(value)
        if not math.isfinite(number):
            raise Sim2RealError(f"truth value of {name} must be finite, got {value}")
        out[str(name)] = number
    return out
