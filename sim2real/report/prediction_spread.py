"""The predicted spread of a replayed run in the report (``replay --spread``): each trial's real outcome against
its band and modes, what the band is made of, and a figure of the draws."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sim2real.report.document import Block, Figure, Heading, Paragraph, Table
from sim2real.report.figures import FIGURE_PREFIX, prediction_spread_figure
from sim2real.sysid.prediction import SPREAD_JSON
from sim2real.trials.jsonio import read_json


def prediction_spread_blocks(label: str, run: Path) -> list[Block]:
    """The predicted spread of a run (``replay --spread``: ``spread.json`` in it) as a table and a figure; none
    without one."""
    blocks: list[Block] = []
    path = run / SPREAD_JSON
    if path.is_file():
        spread = read_json(path, "predicted spread")
        blocks += [Heading(f"Predicted spread: run '{label}'"),
                   Paragraph(f"Each trial simulated under {spread.get('draws')} parameter sets drawn from "
                             f"{Path(str(spread.get('fit'))).name} (start noise {spread.get('start_noise')}). "
                             + _band_words(spread) + " " + str(spread.get("summary")))]
        rows = []
        for trial in spread.get("trials", []):
            out = trial["outcome"]
            rows.append((trial["trial"], *(_band_text(out[key], scale) for key, scale in
                                           (("x_m", 100.0), ("y_m", 100.0), ("yaw_deg", 1.0))),
                         _modes_text(trial.get("modes") or []),
                         {True: "yes", False: "NO", None: "n/a"}[trial.get("inside")],
                         {True: "yes", False: "NO", None: "n/a"}[trial.get("parameter_inside", trial.get("inside"))],
                         str(trial["failed_draws"])))
        blocks.append(Table(("trial", "x (cm): real [band]", "y (cm): real [band]", "yaw (deg): real [band]",
                             "modes: probability (yaw, deg)", "inside", "inside the draws alone", "failed draws"),
                            tuple(rows), "Real outcome against the predicted band"))
        figure = prediction_spread_figure(spread.get("trials", []))
        if figure is not None:
            blocks.append(Figure(f"{FIGURE_PREFIX}{label}_spread.png".replace("/", "_"), figure,
                                 "Predicted final box centres (grey), the band of each mode (rectangles) and the "
                                 "real one (diamond; hollow when the outcome lies outside)."))
    return blocks


def _band_words(spread: Mapping[str, Any]) -> str:
    """What a spread's band is made of and how it was calibrated, in words."""
    level = 100 * float(spread.get("level", 0.95))
    cal = spread.get("calibration")
    if not isinstance(cal, Mapping):
        return (f"The band is the central {level:g} % of the draws (parameter-only, NOT CALIBRATED: it holds what the "
                "parameters and the start leave open, not the model's discrepancy).")
    tau = cal.get("discrepancy", {})
    makeup = spread.get("makeup", {})
    draws = makeup.get("x_m", {}).get("draws")
    spread_mm = f"{1000 * draws:.2g} mm" if isinstance(draws, (int, float)) else "n/a"
    frame = makeup.get("x_m", {}).get("frame")
    framed = (f"; the tracking frame drawn from its calibration's uncertainty, median x {1000 * frame:.2g} mm"
              if isinstance(frame, (int, float)) and frame > 0 else "")
    cross = spread.get("cross_fit")
    if isinstance(cross, Mapping):  # a fit's own spread, cross-fitted
        seen = (f"trial(s) each predicted by a fit that did not see it ({cross['trials']} fitted trial(s) by "
                f"{cross['folds']} fold fits)")
    elif spread.get("check") is not None:  # a fit's own spread on its held-out trials
        seen = "held-out trial(s)"
    else:  # a replay with a fit's calibration (held out, or cross-fitted)
        seen = "trial(s) each predicted by a fit that did not see it"
    return (f"The band at {level:g} % is each mode's box: its centre ± q √(s² + τ²), with s the spread of the mode's "
            f"draws (parameters and start{framed}; median x {spread_mm}), τ the model's discrepancy estimated on "
            f"{cal.get('trials')} {seen} (x {1000 * tau.get('x_m', 0):.2g} mm, "
            f"y {1000 * tau.get('y_m', 0):.2g} mm, yaw {tau.get('yaw_deg', 0):.2g} deg) and "
            f"q = {cal.get('quantile', 0):.3g} their split conformal quantile (guaranteed level "
            f"{100 * cal.get('guaranteed_level', 0):.0f} %).")


def _modes_text(modes: Sequence[Mapping[str, Any]]) -> str:
    if len(modes) < 2:
        return "one"
    return ", ".join(f"{m['probability']:.2f} ({m['yaw_deg']['centre']:.0f})" for m in modes)


def _band_text(entry: Mapping[str, Any], scale: float) -> str:
    low, high = entry["band"]
    band = f"[{scale * low:.1f}, {scale * high:.1f}]" if low is not None and high is not None else "[n/a]"
    return f"{scale * entry['real']:.1f} {band}"
