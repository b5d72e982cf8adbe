"""The design loop as a demo (``sim2real demo --design N``): first pushes, a fit, N designed pushes against N more
of the standard sequence, on the reality stand-in.

1. **First pushes** — the stand-in pushes the box from :data:`FIRST_DISTANCES` (central pushes of the standard
   push) as ROS 2 nodes.
2. **Fit** — :data:`LOOP_FREE` from whole trials, the pusher played back as recorded: central pushes do not tell
   the pusher's friction (the box does not turn), so the fit exits with it undetermined.
3. **Design** — ``sim2real design`` from that fit: N pushes that do not tip the box, written as an experiment
   file (``designed.yaml``, with ``designed.json``).
4. **Designed and standard pushes** — the stand-in runs the designed file, and N more pushes of the standard
   sequence (:data:`STANDARD_NEXT`) for comparison.
5. **Refits and report** — the first pushes with each set refitted; the report compares them with the forecast
   (``report --design``) and the stand-in's hidden values (``--truth``).

The check: the refit on the designed pushes converged without problems, every interval holds the stand-in's
hidden value, and its intervals are narrower than the standard sequence's (the median over the parameters of
the ratio of widths, an undetermined parameter's width its bound range).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim2real.params import ParameterSet, spec

#: What the loop fits: the frictions (the stand-in's are 30 % away from nominal) and the centre-of-mass height
#: (6 cm below the centre in the stand-in: it topples the box from the nearer standard pushes).
LOOP_FREE = ("contact.mu_table", "contact.mu_pusher", "box.com_z")
#: The first pushes (the standard push, box centre at these distances, m): below and above the stand-in box's
#: toppling distance, not at it.
FIRST_DISTANCES = (0.30, 0.35, 0.45)
#: The standard sequence's next pushes, compared with the designed ones.
STANDARD_NEXT = (0.30, 0.35, 0.45)
#: The designed pushes tip the box at most this much at the first fit's values (deg).
MAX_TILT_DEG = 10.0


@dataclass(frozen=True)
class LoopOutcome:
    """What the loop found: ``check`` (``design_check.json``), the table's lines and the report's path."""

    check: dict[str, Any]
    lines: list[str]
    report: Path


def _width(result: Any, name: str) -> float:
    """``name``'s 95 % interval width in ``result`` (a FitResult), the bound range when it has none."""
    interval = result.ci95.get(name)
    return float(interval[1] - interval[0]) if interval else spec(name).upper - spec(name).lower


def _fit(records: Sequence[Any], sources: Sequence[str], out: Path, engine: str, log: Callable[[str], None]) -> Any:
    from sim2real.sysid import FitProblem, ResidualSpec, fit_trials
    from sim2real.sysid.files import write_fit

    result = fit_trials(FitProblem(records, ParameterSet.nominal(), ",".join(LOOP_FREE),
                                   spec=ResidualSpec(horizon=None, mode="kinematic", engine=engine),
                                   platform="real", sources=list(sources)))
    params_path, fit_json = write_fit(out, result)
    log(f"{out.stem}: {result.status}" + (f" ({'; '.join(result.problems)})" if result.problems else "")
        + f"; wrote {params_path.name} and {fit_json.name}")
    return result


def _table(hidden: Mapping[str, float], fits: Mapping[str, Any], forecast: Mapping[str, float]) -> list[str]:
    columns = "".join(f" {k + ' ±':>22s}" for k in fits)
    lines = [f"  {'parameter':20s} {'hidden':>8s}{columns} {'forecast ±':>12s}"]
    for name in LOOP_FREE:
        cells = []
        for result in fits.values():
            interval = result.ci95.get(name)
            half = _width(result, name) / 2
            holds = "" if interval is None else (" ok" if interval[0] <= hidden[name] <= interval[1] else " MISS")
            cells.append(f"{half:.3g}" + (" (undet.)" if interval is None else "") + holds)
        lines.append(f"  {name:20s} {hidden[name]:8.4g}" + "".join(f" {c:>22s}" for c in cells)
                     + f" {forecast[name] / 2:12.3g}")
    return lines


def run_design_loop(out: Path, count: int, hidden: Mapping[str, float], standin_host: str, engine: str,
                    workers: int, step: Callable[[int, str], None], log: Callable[[str], None]) -> LoopOutcome:
    """Run the loop (see the module docstring) into ``out``; ``step(k, text)`` opens step k of 5.

    Raises
    ------
    Sim2RealError
        A stand-in run failed, or a fit had no usable trial.
    """
    from sim2real.control import ExperimentConfig, load_experiment_config, save_experiment_config
    from sim2real.execution import open_executor
    from sim2real.filemodes import write_text_atomic
    from sim2real.nodes.runner import run_experiment
    from sim2real.report import build_report
    from sim2real.sysid.design import PushSpace, design_pushes, prior_from_fit
    from sim2real.sysid.files import fit_document
    from sim2real.trials import read_run

    nominal = ParameterSet.nominal()
    base = load_experiment_config()
    runs = {"first": out / "first", "designed": out / "designed", "standard": out / "standard"}
    fit_dir = out / "fit"

    def record(name: str, distances: Sequence[float] | None, experiment: Path | None = None) -> list[Any]:
        run_experiment("standin", distances, nominal, runs[name], experiment_file=experiment,
                       standin_host=standin_host, progress=log, engine=engine)
        return list(read_run(runs[name]))

    step(1, f"first pushes on the stand-in from {', '.join(f'{d:g}' for d in FIRST_DISTANCES)} m")
    first = record("first", FIRST_DISTANCES)
    step(2, f"fit {', '.join(LOOP_FREE)} from the first pushes")
    first_fit = _fit(first, [str(runs["first"])] * len(first), fit_dir / "first.yaml", engine, log)
    step(3, f"design {count} push(es) from that fit (no toppling)")
    prior = prior_from_fit(fit_document(first_fit), "the first fit", first_fit.params)
    with open_executor("local", workers) as executor:
        design = design_pushes(prior, PushSpace.default(base.push, prior.params), count, executor,
                               max_tilt_deg=MAX_TILT_DEG, standard=ExperimentConfig(STANDARD_NEXT, base.push),
                               progress=log)
    designed_file = out / "designed.yaml"
    save_experiment_config(designed_file, design.experiment(base),
                           header=f"sim2real design: {count} pushes for {', '.join(LOOP_FREE)} (sim2real demo)")
    design_json = write_text_atomic(out / "designed.json", json.dumps(design.as_dict(), indent=1) + "\n")
    for n, info in enumerate(design.pushes, start=1):
        log(f"designed push {n}: {info.candidate.label()}")
    step(4, f"the {count} designed push(es), then {count} more of the standard sequence, on the stand-in")
    designed = record("designed", None, designed_file)
    standard = record("standard", STANDARD_NEXT[:count])
    step(5, "refits on the first pushes with each, and the report")
    sources_first = [str(runs["first"])] * len(first)
    fits = {"first": first_fit,
            "+designed": _fit([*first, *designed], sources_first + [str(runs["designed"])] * len(designed),
                              fit_dir / "designed.yaml", engine, log),
            "+standard": _fit([*first, *standard], sources_first + [str(runs["standard"])] * len(standard),
                              fit_dir / "standard.yaml", engine, log)}
    forecast = {name: float(design.after[-1].width[k]) for k, name in enumerate(prior.labels)}
    report = build_report([runs["first"], runs["designed"], runs["standard"]], out / "report",
                          fit=[fit_dir / "first.json", fit_dir / "designed.json", fit_dir / "standard.json"],
                          design=design_json, truth=dict(hidden), title="sim2real: the design loop on the stand-in")
    check = _check(fits, hidden)
    check["recorded"] = {name: len(trials) for name, trials in (("first", first), ("designed", designed),
                                                                 ("standard", standard))}
    return LoopOutcome(check, _table(hidden, fits, forecast), report.html)


def _check(fits: Mapping[str, Any], hidden: Mapping[str, float]) -> dict[str, Any]:
    """The loop's verdict (see the module docstring)."""
    designed, standard = fits["+designed"], fits["+standard"]
    ratios = [_width(standard, n) / _width(designed, n) for n in LOOP_FREE]
    missed = []
    if not designed.ok:
        missed.append(f"the refit on the designed pushes is {designed.status} with problems: "
                      f"{'; '.join(designed.problems)}")
    for name in LOOP_FREE:
        interval = designed.ci95.get(name)
        if interval is not None and not interval[0] <= hidden[name] <= interval[1]:
            missed.append(f"{name}'s interval [{interval[0]:.4g}, {interval[1]:.4g}] misses the hidden "
                          f"{hidden[name]:.4g}")
    ratio = statistics.median(ratios)
    if ratio <= 1.0:
        missed.append(f"the designed pushes' intervals are not narrower than the standard sequence's (median "
                      f"ratio {ratio:.3g})")
    return {"passed": not missed, "missed": missed, "width_ratio_standard_over_designed": ratio,
            "fits": {label: {"status": f.status, "problems": list(f.problems),
                             "ci95": {n: f.ci95.get(n) for n in LOOP_FREE}} for label, f in fits.items()}}
