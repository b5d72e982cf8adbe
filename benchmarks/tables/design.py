"""Tables of the experiment design benchmarks (issue 59): designed pushes on known truth, and the design's speed."""

from __future__ import annotations

from collections.abc import Mapping

from benchmarks.tables.format import md_table, num, with_provenance
from benchmarks.tables.store import load

_SCENARIOS = {"box": "the published box, first pushes at 0.30, 0.35, 0.40 m",
              "flat": "a flat block pushed slowly at its centre line"}


def _coverage(summary: Mapping, strategy: str) -> str:
    counts = summary["coverage"][strategy]
    return f"{counts['holds']}/{counts['of']}"


def _design_truth_rows(record: Mapping, model_error: str) -> list[tuple]:
    """One row per scenario of a stored design_truth run, with its push space's range of the box's yaw."""
    out = record["output"]
    rows = []
    for name, summary in out["summary"].items():
        seeds = summary["seeds"]
        ratios = summary["width_ratio_median"]
        forecast = summary.get("achieved_over_forecast") or {}
        forecast_random = (summary.get("forecast_random_over_designed") or {}).get("median")
        random = f"{num(ratios['random'], 2)}x" + (f" ({num(forecast_random, 2)}x)" if forecast_random else "")
        rows.append((f"{name}: {_SCENARIOS.get(name, name)}", _box_yaw(record), model_error, seeds,
                     f"{summary['initial_undetermined']}/{seeds}",
                     " / ".join(f"{summary['all_determined'][k]}" for k in ("designed", "standard", "random")),
                     f"{num(ratios['standard'], 2)}x", random,
                     " / ".join(_coverage(summary, k) for k in ("designed", "standard", "random")),
                     num(forecast.get("median"), 2)))
    return rows


def _box_yaw(record: Mapping) -> str:
    """The push space's range of the box's yaw at the start, deg; a run stored before the yaw was in the space: 0."""
    low, high = record["output"].get("box_yaw_range_deg", (0.0, 0.0))
    return f"{num(low, 2)}° to {num(high, 2)}°" if low < high else f"{num(low, 2)}°"


def _model_error(record: Mapping) -> str:
    """The run's model error in words: each trial's own table friction, or none."""
    spread = record["output"].get("friction_spread", 0.15)  # a run stored before the option had its default
    return f"trial friction ±{100 * spread:.0f} %" if spread else "none"


def design_truth_table() -> str | None:
    """benchmarks.design_truth: per scenario, fits with every parameter determined, width ratios, coverage; with the
    model error the fitted model cannot represent (``design_truth``) and, when stored, without it
    (``design_truth_exact``: the machinery's own figures), and with the box's yaw in the push space
    (``design_truth_yaw``, first)."""
    records = {name: load(name) for name in ("design_truth_yaw", "design_truth", "design_truth_exact")}
    stored = {name: record for name, record in records.items() if record is not None}
    if "design_truth" not in stored:
        return None
    rows = [row for record in stored.values() for row in _design_truth_rows(record, _model_error(record))]
    table = md_table(("scenario", "box yaw", "model error", "seeds", "first fit undetermined",
                      "all determined: designed / standard / random", "width standard / designed",
                      "width random / designed (forecast)", "intervals holding the truth: designed / standard / random",
                      "achieved / forecast width"), rows)
    walls = [s["wall_s"] for record in stored.values() for s in record["output"]["per_seed"] if "wall_s" in s]
    text = (f"{table}\n\nThree first pushes, then three more. Width ratios: the median over seeds of the median "
            "over the three parameters (target: at least 2x); in brackets the design's own forecast for random pushes "
            "from its candidates (the median over seeds of the median over 200 sets). "
            f"{num(min(walls), 2)}-{num(max(walls), 2)} s per seed and scenario (four fits and a design).")
    return with_provenance(text, *stored)


def design_speed_table() -> str | None:
    """benchmarks.design_speed: the time to design 6 pushes for 5 parameters."""
    record = load("design_speed")
    if record is None:
        return None
    out = record["output"]
    rows = [(f"{out['pushes']} pushes, {out['parameters']} parameters, {out['candidates']} candidates x "
             f"{out['points']} points, {out['workers']} workers", f"{num(out['median_s'], 3)} s",
             " / ".join(f"{num(r['wall_s'], 3)}" for r in out["runs"]), f"{num(out['simulations_per_s'], 3)}",
             f"under {num(out['target_s'], 2)} s")]
    table = md_table(("design", "median", "runs (s)", "candidate simulations per s", "target"), rows)
    return with_provenance(table, "design_speed")
