"""Tables of prediction bands on known truth: calibrated coverage under model error (benchmarks.band_truth) and
the modes of a bistable push (benchmarks.band_modes)."""

from __future__ import annotations

from benchmarks.tables.format import md_table, num, with_provenance
from benchmarks.tables.store import load


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f} %"


#: What each protocol of benchmarks.band_truth calibrates on, in words.
_PROTOCOL_WORDS = {"split": "fit on the 8 training pushes, calibrated on the 12 held-out ones",
                   "cross": "fit on all 20, calibrated on each predicted by a fit without its fold (--cross-fit 5)"}


def _protocol_row(seed: dict) -> tuple[str, ...]:
    fit, test = seed["fit"], seed["test"]
    tau = fit["discrepancy"] or {}
    check = fit["calibration_check"] or {}
    position = (test["bands"] or {}).get("position_m") or {}
    return (str(fit["exit"]), f"{num(tau.get('x_mm'), 2)}, {num(tau.get('y_mm'), 2)}, {num(tau.get('yaw_deg'), 2)}",
            num(fit["quantile"], 3), f"{check.get('inside', '–')}/{check.get('judged', '–')}",
            f"{test['inside']}/{test['judged']}", f"{test['parameter_inside']}/{test['judged']}",
            f"{num(1e3 * position['median_half_width'], 2)} / {num(1e3 * position['median_error'], 2)}"
            if position else "–", num(seed["fit_s"]))


def _protocol_sentence(protocol: str, summary: dict, ideal: dict) -> str:
    position, yaw = summary["bands"]["position_m"], summary["bands"]["yaw_deg"]
    half, error = num(1e3 * position["median_half_width"], 2), num(1e3 * position["median_error"], 2)
    width, draws = num(1e3 * position["median_width"], 2), num(1e3 * position["median_parameter_width"], 2)
    kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(summary["problem_kinds"].items()))
    return (f"**{protocol}** ({_PROTOCOL_WORDS[protocol]}): over {summary['seeds']} seeds the calibrated 90 % band "
            f"holds {summary['test_inside']} of {summary['test_judged']} test outcomes "
            f"({_pct(summary['test_inside_share'])}), the parameter-only band {summary['test_parameter_inside']} "
            f"({_pct(summary['test_parameter_inside_share'])}); the fits' own leave-one-out check on their "
            f"calibration trials {summary['calibration_check_inside']} of {summary['calibration_check_judged']}. "
            f"Median half-width against median error |real − median|: position {half} mm against {error} mm (a "
            f"median {num(position['half_width_over_error'], 2)} errors per seed; "
            f"{num(position.get('half_width_over_distance_error'), 2)} median distances of the real final centre "
            f"from the predicted one, {num(1e3 * position['median_distance_error'], 2)} mm; full width {width} mm, "
            f"the draws' alone {draws} mm), yaw {num(yaw['median_half_width'], 2)}° against "
            f"{num(yaw['median_error'], 2)}°. The same band with the model right but for normal errors would hold "
            f"{_pct(ideal['coverage'])} at a median "
            f"{num(ideal['position_half_width_over_error'], 2)} errors "
            f"({num(ideal['position_half_width_over_distance_error'], 2)} distances). Fit exit statuses "
            + ", ".join(f"{code}: {count}" for code, count in summary["fits_exit"].items())
            + (f"; problems named: {kinds}" if kinds else "") + ".")


def band_truth_table() -> str | None:
    """benchmarks.band_truth: calibrated and parameter-only bands on test pushes, per seed and protocol."""
    record = load("band_truth")
    if record is None:
        return None
    out = record["output"]
    protocols = list(out["summary"])
    by_seed: dict[int, dict[str, dict]] = {}
    for protocol in protocols:
        for seed in out["per_seed"][protocol]:
            by_seed.setdefault(seed["seed"], {})[protocol] = seed
    heads = ("fit exit", "τ x, y (mm), yaw (deg)", "q", "calibration trials inside (each by the others)",
             "test inside the calibrated 90 % band", "inside the parameter-only band",
             "position half-width / median error (mm)", "fit (s)")
    rows = [(str(seed), protocol, *_protocol_row(entries[protocol]))
            for seed, entries in sorted(by_seed.items()) for protocol in protocols if protocol in entries]
    table = md_table(("seed", "calibrated by", *heads), rows)
    sentences = [_protocol_sentence(p, out["summary"][p], out["ideal_normal_reference"][p]) for p in protocols]
    return with_provenance(table + "\n\n" + "\n\n".join(sentences), "band_truth")


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


def start_error_table() -> str | None:
    """benchmarks.start_error: the start error a fit chooses on held-out realities of a bistable push, and what
    the replay then predicts of new ones, per hidden offset and variant."""
    record = load("start_error")
    if record is None:
        return None
    out = record["output"]
    rows = []
    for scene in out["scenes"]:
        for v in scene["variants"]:
            chosen = v["chosen"] or {}
            scores = "; ".join(f"{num(c['position_mm'], 2)}: {num(c['mean_log_score'], 3)}"
                               for c in chosen.get("candidates", []))
            rows.append((num(scene["hidden_offset_std_mm"], 2), f"`{v['start_error_option']}`",
                         f"{num(chosen.get('position_mm'), 2)} mm, {num(chosen.get('yaw_deg'), 2)}°", scores or "–",
                         f"{v['trials_with_two_modes']}/{v['judged']}", num(v["predicted_left"], 2),
                         f"{num(v['realities_left'], 2)} (expected {num(scene['expected_left'], 2)})",
                         f"{num(v['difference_pp'], 2)} ({num(v['difference_from_expected_pp'], 2)})",
                         f"{v['inside']}/{v['judged']}",
                         num(v["median_yaw_half_width_deg"], 3), num(v["mean_log_score"], 3)))
    table = md_table(("hidden offset σ (mm)", "--start-error", "chosen", "candidates: mean log score (mm: score)",
                      "test trials with two modes", "predicted P(left)", "test realities left",
                      "difference from the test realities (from expected), points",
                      "test inside the calibrated 90 % band", "median yaw half-width (deg)", "mean log score"), rows)
    return with_provenance(table, "start_error")
