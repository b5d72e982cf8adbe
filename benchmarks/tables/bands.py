"""Tables of prediction bands on known truth: calibrated coverage under model error (benchmarks.band_truth) and
the modes of a bistable push (benchmarks.band_modes)."""

from __future__ import annotations

from benchmarks.tables.format import md_table, num, with_provenance
from benchmarks.tables.store import load


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f} %"


def band_truth_table() -> str | None:
    """benchmarks.band_truth: calibrated and parameter-only bands on test pushes, per seed."""
    record = load("band_truth")
    if record is None:
        return None
    out = record["output"]
    summary, ideal = out["summary"], out["ideal_normal_reference"]
    rows = []
    for seed in out["per_seed"]:
        fit, test = seed["fit"], seed["test"]
        tau = fit["discrepancy"] or {}
        check = fit["calibration_check"] or {}
        position = (test["bands"] or {}).get("position_m") or {}
        rows.append((seed["seed"], fit["exit"], f"{num(tau.get('x_mm'), 2)}, {num(tau.get('y_mm'), 2)}, "
                     f"{num(tau.get('yaw_deg'), 2)}", num(fit["quantile"], 3),
                     f"{check.get('inside', '–')}/{check.get('judged', '–')}",
                     f"{test['inside']}/{test['judged']}", f"{test['parameter_inside']}/{test['judged']}",
                     f"{num(1e3 * position['median_half_width'], 2)} / {num(1e3 * position['median_error'], 2)}"
                     if position else "–", num(seed["fit_s"])))
    table = md_table(("seed", "fit exit", "τ x, y (mm), yaw (deg)", "q", "calibration trials inside (each by the "
                      "others)", "test inside the calibrated 90 % band", "inside the parameter-only band",
                      "position half-width / median error (mm)", "fit (s)"), rows)
    position, yaw = summary["bands"]["position_m"], summary["bands"]["yaw_deg"]
    half, error = num(1e3 * position["median_half_width"], 2), num(1e3 * position["median_error"], 2)
    width, draws = num(1e3 * position["median_width"], 2), num(1e3 * position["median_parameter_width"], 2)
    kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(summary["problem_kinds"].items()))
    text = (f"{table}\n\nOver {summary['seeds']} seeds the calibrated 90 % band holds {summary['test_inside']} of "
            f"{summary['test_judged']} test outcomes ({_pct(summary['test_inside_share'])}), the parameter-only band "
            f"{summary['test_parameter_inside']} ({_pct(summary['test_parameter_inside_share'])}); the fits' own "
            f"leave-one-out check on their calibration trials {summary['calibration_check_inside']} of "
            f"{summary['calibration_check_judged']}. Median half-width against median error |real − median|: "
            f"position {half} mm against {error} mm (a median {num(position['half_width_over_error'], 2)} errors "
            f"per seed; full width {width} mm, the draws' alone {draws} mm), yaw {num(yaw['median_half_width'], 2)}° "
            f"against {num(yaw['median_error'], 2)}°. The same band "
            f"with the model right but for normal errors would hold {_pct(ideal['coverage'])} at a median "
            f"{num(ideal['position_half_width_over_error'], 2)} errors. Fit exit statuses "
            + ", ".join(f"{code}: {count}" for code, count in summary["fits_exit"].items())
            + (f"; problems named: {kinds}" if kinds else "") + ".")
    return with_provenance(text, "band_truth")


def band_modes_table() -> str | None:
    """benchmarks.band_modes: modes of a bistable push against its realities, per scene."""
    record = load("band_modes")
    if record is None:
        return None
    out = record["output"]
    rows = []
    for scene in out["scenes"]:
        modes = "; ".join(f"{num(m['probability'], 2)} at {num(m['centre'][2], 3)}°" for m in scene["modes"])
        why = scene.get("why_one_mode")
        reason = _refusal(why) if why and why.get("refused_by") else ""
        rows.append((f"{scene['travel_m']:g}", scene["draws"], modes, f"{num(scene['predicted_left_modes'], 2)} "
                     f"({num(scene['predicted_left_draws'], 2)})", num(scene["realities_left"], 2),
                     f"{scene['nearest_mode_same_turn']}/{scene['realities']}",
                     f"{num(scene['median_log_score'], 3)} ({num(scene['median_log_score_one_normal'], 3)})",
                     f"{num(scene['mean_log_score'], 3)} ({num(scene['mean_log_score_one_normal'], 3)})", reason))
    table = md_table(("travel (m)", "draws", "modes: probability at yaw", "predicted P(left) from the modes "
                      "(draws)", "realities left", "nearest mode turns the reality's way", "median log score "
                      "(one normal)", "mean log score (one normal)", "one mode: refused by"), rows)
    primary = out["summary"]["primary"]
    text = (f"{table}\n\nPrimary scene ({primary['travel_m']:g} m, {primary['draws']} draws): "
            f"{len(primary['modes'])} mode(s), predicted P(left) {num(primary['predicted_left_modes'], 2)} against "
            f"{num(primary['realities_left'], 2)} of {primary['realities']} realities ("
            f"{num(primary['difference_pp'], 2)} percentage points; target ≤ {num(100 * out['scene']['tolerance'])}).")
    return with_provenance(text, "band_modes")


def _refusal(why: dict) -> str:
    """Which tests refused a split, with their figures (:func:`sim2real.sysid.prediction.bands.split_test`)."""
    needed, parts = why["needed"], []
    if "gap and dip" in why["refused_by"]:
        parts.append(f"gap {num(why['gap'], 3)} < {num(needed['gap'], 3)} and dip {num(why['dip'], 2)} < "
                     f"{num(needed['dip'], 2)}")
    if "separation" in why["refused_by"]:
        parts.append(f"D {num(why['separation'], 2)} < {num(needed['separation'], 2)}")
    return ", ".join(parts)
