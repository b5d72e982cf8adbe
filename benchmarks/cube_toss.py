"""Benchmark of the cube-toss fit on real data: the README's fit on every block of consecutive tosses.

``python -m benchmarks.cube_toss --json`` imports the ContactNets tosses (shipped in ``sim2real/data/cube_toss``),
fits ``contact.mu_table``, the tied cube side and ``box.edge_radius`` (the table at the tag board's
z = 0) with 40-step segments (``--horizon``) on each block of ``--block`` consecutive tosses (the
README's command, from a sharp cube 9 % too small),
validates each block's fit on the next block (held-out 40-step prediction error before and after),
and with ``--all`` fits all tosses at once. Prints one JSON object: per block the side, its
standard deviation and 95 % interval, the stop reason and status; the spread of the sides, how
many lie within 3 % of the measured 0.1048 m, and whether every pair of block intervals overlaps.

Takes 1-11 s per block on 2 workers, and 14-64 s for all 570 tosses at once (2026-11-27: 37 s, the
whole benchmark 183 s; 2026-11-28, 11 iterations instead of 13: 64 s, the whole benchmark 357 s on a slower day;
2026-11-29, the fit's tasks in batches: 52 s, the whole benchmark 294 s; the same fit alone, in alternating
pairs an hour earlier: 33-38 s in batches, 40-46 s one task per trial; 2026-11-29 afternoon, ties
differentiated along the tie and trials kept by the workers: 39 s against 45-46 s, the whole benchmark 225 s;
2026-11-29 evening, a faster hour: 18 s, then with fewer reference counts in the kernels and no extension of
an ending step: 14 s, the whole benchmark 89 s).

Calibrated prediction bands (``bands``; ``--no-bands`` skips them; 7-15 s per block on 2 workers, 193 s of the whole
benchmark's 571 s on 2026-12-01, a machine loaded by another benchmark):
per block the same fit on half of it (``sim2real fit --holdout 0.5``'s split, seed ``--band-seed``),
then each held-out toss's 40-step outcome predicted as a spread (:mod:`sim2real.sysid.prediction.spread`) under
``--band-draws`` parameter sets drawn from that fit, with each recording's measured start noise. The
40-step outcome is the box pose 40 simulated steps after the toss's start state: the tosses are
sampled uniformly at 148 Hz, so a box-only trial's step is the sample interval (``sim.dt`` is
replaced by 1/148 s, :mod:`sim2real.sysid.problem.data`), and a whole-trial rollout starts from the state at
pose 1 (its velocity from poses 0 and 1), as the fit's first 40-step segment does; each held-out toss
is cut to its first 42 poses, so the spread's outcome is pose 41 (0.277 s after pose 0), exactly
where that segment ends. The 90 % band is calibrated on the 15 held-out tosses, each judged by the
calibration from the other 14 (leave one out, :func:`sim2real.sysid.prediction.spread_calibration.self_calibration`), on
the spread's coordinates x, y (m) and the yaw since the start (deg), and again on x, y alone
(``position_only``). The yaw of a tumbling cube is the twist about world z of its rotation from pose
0 to pose 41, which is well defined for these tosses (their rotations over 41 poses stay below
130 degrees, never near a half turn about a horizontal axis, where the twist would be undefined), so
it is judged. Per block: inside / judged for the calibrated and the parameter-only band (the draws'
central 90 %), the discrepancy, the conformal quantile, per coordinate the misses and the median band
half-width against the median error, the trials with several modes; ``next_block``: the next block's
held-out half predicted by this fit and judged by this calibration (trials neither saw). Overall the
share inside over all blocks (the issue's target: 85-95 %).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

from sim2real.data import cube_toss_npz
from sim2real.execution import Executor, LocalExecutor
from sim2real.params import ParameterSet
from sim2real.sysid import FitProblem, LMSettings, ResidualSpec, Weights, fit_trials
from sim2real.sysid.prediction import misses_level
from sim2real.trials import PoseSeries, TrialRecord, read_trial
from sim2real.trials.cube_toss import import_cube_tosses, load_cube_tosses

NPZ = cube_toss_npz()
MEASURED_SIDE = 0.1048
FREE = "contact.mu_table,box.size_x=box.size_y=box.size_z,box.edge_radius"
START = {"box.mass": 0.37, "box.size_x": 0.095, "box.size_y": 0.095, "box.size_z": 0.095}
HORIZON = 40
#: Residual weights of the README's cube-toss fit (see the README: from the measured pose noise).
WEIGHTS = "position=1000,orientation=30"


def _block_fit(records: list, held: list, workers: int, iterations: int, weights: Weights, horizon: int) -> dict:
    start = ParameterSet.nominal().replace(START)
    clock = time.perf_counter()
    result = fit_trials(FitProblem(records, start, FREE, spec=ResidualSpec(horizon=horizon, weights=weights),
                                   validation=held), settings=LMSettings(max_iterations=iterations), workers=workers)
    seconds = time.perf_counter() - clock
    side = result.values["box.size_x"]
    out = {"trials": len(records), "side_m": side, "side_std_m": result.std["box.size_x"],
           "side_ci95_m": list(result.ci95["box.size_x"]) if result.ci95.get("box.size_x") else None,
           "side_error": side / MEASURED_SIDE - 1.0, "mu_table": result.values["contact.mu_table"],
           "edge_radius_m": result.values["box.edge_radius"], "edge_radius_std_m": result.std["box.edge_radius"],
           "status": result.status,
           "problems": list(result.problems), "stop_reason": result.stop_reason,
           "iterations": result.trace[-1]["iteration"], "wall_s": seconds}
    prediction = (result.validation or {}).get("prediction", {}).get("validation", {}).get("horizon_rms")
    if prediction:
        out["held_out_40_step_rms_m"] = {"start": prediction["start"].get("position_m"),
                                         "fitted": prediction["final"].get("position_m")}
    return out


# ---------------------------------------------------------------------------------------------------------------------
# calibrated prediction bands of the 40-step outcome (issue 55)

#: Simulated steps of the predicted outcome: from the start state (pose 1, its velocity from poses 0 and 1; one
#: step is one 148 Hz sample) to pose ``1 + BAND_STEPS``, the end of the fit's first 40-step segment.
BAND_STEPS = HORIZON
BAND_DRAWS = 30
BAND_LEVEL = 0.9
BAND_SEED = 0
_AXES = ("x_m", "y_m", "yaw_deg")


def cut_record(record: TrialRecord, poses: int) -> TrialRecord:
    """A copy of a toss holding only its first ``poses`` box poses (its whole-trial prediction then ends there)."""
    real = record.platform("real")
    assert real is not None and real.box_pose is not None
    box = real.box_pose
    cut = PoseSeries(box.t[:poses], box.position[:poses], box.quaternion[:poses])
    return dataclasses.replace(record, platforms={**record.platforms, "real": dataclasses.replace(real, box_pose=cut)})


def _position_only(spreads: list) -> list:
    """The spreads with the yaw coordinate set to 0 in every draw and the real outcome: a band then judges x, y only
    (its yaw box is [0, 0] and every yaw score 0)."""
    import numpy as np

    keep = np.array([1.0, 1.0, 0.0])
    return [dataclasses.replace(s, real=s.real * keep, predicted=s.predicted * keep) for s in spreads]


def _band_summary(spreads: list, draw: object, level: float, draws: int, seed: int,
                  calibration: object = None) -> dict:
    """The band of ``spreads`` calibrated on themselves, each judged by the calibration from the others (leave
    one out, :func:`sim2real.sysid.prediction.spread_calibration.self_calibration`), or by ``calibration`` (from
    other trials): the counts, the discrepancy and quantile, per coordinate the misses and the median band
    half-width against the median error of the draws' median."""
    import numpy as np

    from sim2real.sysid.prediction import self_calibration, spread_record

    check = self_calibration(spreads, level) if calibration is None else None
    record = spread_record(spreads, draw.uniform, draws, seed, {"measured": True}, "the block's fit", level,
                           calibration=calibration, check=check)
    entries = [e for e in record["trials"] if e["inside"] is not None]
    kept = record["calibration"]
    out: dict = {"inside": record["inside"], "judged": record["judged"], "parameter_inside": record["parameter_inside"],
                 "misses_level": misses_level(record["inside"], record["judged"], level) is not None,
                 "calibrated": record["calibrated"], "quantile": kept["quantile"] if kept else None,
                 "discrepancy": kept["discrepancy"] if kept else None,
                 "failed_draws": sum(e["failed_draws"] for e in record["trials"]),
                 "several_modes": record["unstable"], "outside": [e["trial"] for e in entries if not e["inside"]]}
    per_axis = {}
    for axis in _AXES:
        scale = 1.0 if axis == "yaw_deg" else 1000.0
        coords = [e["outcome"][axis] for e in entries]
        half = [0.5 * (c["band"][1] - c["band"][0]) for c in coords if None not in c["band"]]
        per_axis[axis.replace("_m", "_mm")] = {
            "outside": sum(c["inside"] is False for c in coords),
            "parameter_outside": sum(not c["parameter_band"][0] <= c["real"] <= c["parameter_band"][1]
                                     for c in coords),
            "median_half_width": scale * float(np.median(half)) if half else None,
            "median_parameter_half_width": scale * float(np.median([0.5 * (c["parameter_band"][1]
                                                                          - c["parameter_band"][0]) for c in coords])),
            "median_error": scale * float(np.median([abs(c["real"] - c["median"]) for c in coords]))}
    out["per_coordinate"] = per_axis
    errors = [np.hypot(e["outcome"]["x_m"]["real"] - e["outcome"]["x_m"]["median"],
                       e["outcome"]["y_m"]["real"] - e["outcome"]["y_m"]["median"]) for e in entries]
    out["median_position_error_mm"] = 1000.0 * float(np.median(errors)) if errors else None
    return out


def _held_out_half(block: list, seed: int) -> tuple[list, list]:
    """The fitted and the held-out half of a block: ``sim2real fit --holdout 0.5 --seed SEED``'s split."""
    from sim2real.sysid.problem import LoadedTrials, split_holdout

    fitted, held = split_holdout(LoadedTrials(tuple(block), tuple(r.name for r in block), ()), 0.5, seed)
    return list(fitted.records), list(held.records)


def block_bands(block: list, executor: Executor, iterations: int, weights: Weights, draws: int = BAND_DRAWS,
                level: float = BAND_LEVEL, seed: int = BAND_SEED, steps: int = BAND_STEPS,
                later: list | None = None) -> dict:
    """Calibrated bands of one block: fit on half of ``block`` (``--holdout 0.5`` with ``seed``, the README's
    fit), predict the other half's outcome ``steps`` simulated steps after its start state (each held-out toss
    cut to its first ``steps + 2`` poses) as a spread under ``draws`` parameter sets from the fit with each
    recording's measured start noise, and calibrate the ``level`` band on those trials, each judged by the
    calibration from the others (leave one out): on the spread's three coordinates (x, y, yaw since the
    start) and on x, y alone (``position_only``). With ``later`` (the next block), its held-out half is
    predicted by this fit and judged by this calibration (``next_block``: trials neither fit nor calibration saw).
    """
    import numpy as np

    from sim2real.sysid.files import fit_document
    from sim2real.sysid.prediction import MEASURED, fit_distribution, self_calibration, spread_of_fit
    from sim2real.sysid.problem import prepare_trial

    fitted, held = _held_out_half(block, seed)
    start = ParameterSet.nominal().replace(START)
    clock = time.perf_counter()
    result = fit_trials(FitProblem(fitted, start, FREE, spec=ResidualSpec(horizon=HORIZON, weights=weights)),
                        settings=LMSettings(max_iterations=iterations), executor=executor)
    fit_s = time.perf_counter() - clock
    dist = fit_distribution(fit_document(result), "the block's fit", allow_unconverged=True, allow_undetermined=True)
    dt = float(result.params["sim.dt"])
    trials = [prepare_trial(cut_record(r, steps + 2), dt) for r in held]
    clock = time.perf_counter()
    rng = np.random.default_rng(seed)
    draw, spreads = spread_of_fit(executor, dist, result.params, trials, draws, rng, "auto", "auto", noise=MEASURED)
    spread_s = time.perf_counter() - clock
    noise = np.array([[s.noise.position_m, s.noise.yaw_rad] for s in spreads])
    out = {"fitted": [r.name for r in fitted], "held_out": [r.name for r in held],
           "fit": {"side_m": result.values["box.size_x"], "mu_table": result.values["contact.mu_table"],
                   "edge_radius_m": result.values["box.edge_radius"], "status": result.status,
                   "iterations": result.trace[-1]["iteration"], "uniform": list(draw.uniform)},
           "steps": steps, "poses": steps + 2, "grid_dt_s": trials[0].dt, "draws": draws, "level": level,
           "seed": seed,
           "start_noise_median": {"position_mm": 1000.0 * float(np.median(noise[:, 0])),
                                  "yaw_deg": float(np.degrees(np.median(noise[:, 1])))},
           "bands": _band_summary(spreads, draw, level, draws, seed),
           "position_only": _band_summary(_position_only(spreads), draw, level, draws, seed),
           "fit_s": fit_s, "spread_s": spread_s}
    if later:
        calibration = self_calibration(spreads, level).calibration
        later_trials = [prepare_trial(cut_record(r, steps + 2), dt) for r in _held_out_half(later, seed)[1]]
        later_draw, later_spreads = spread_of_fit(executor, dist, result.params, later_trials, draws, rng, "auto",
                                                  "auto", noise=MEASURED)
        out["next_block"] = _band_summary(later_spreads, later_draw, level, draws, seed, calibration=calibration)
    return out


#: Folds of the cross-fitted bands (``--cross-fit``): 6 tosses each of a block of 30.
CROSS_FOLDS = 5


def block_bands_cross(block: list, executor: Executor, iterations: int, weights: Weights, draws: int = BAND_DRAWS,
                      level: float = BAND_LEVEL, seed: int = BAND_SEED, steps: int = BAND_STEPS,
                      later: list | None = None, folds: int = CROSS_FOLDS) -> dict:
    """The calibrated bands of one block by cross-fitting (``sim2real fit --spread-draws --cross-fit``): the fit on
    the whole block, each toss's ``steps``-step outcome predicted as a spread by the fit repeated without its fold
    (:func:`sim2real.sysid.prediction.cross_fit.fold_groups` with ``seed``, each fold fit started at the block's
    fit with one start), the ``level`` band calibrated on all of them, each judged by the calibration from the
    others. With ``later``, its held-out half (the split protocol's ``next_block`` tosses) is predicted by the
    block's fit and judged by this calibration."""
    import functools
    import types

    import numpy as np

    from sim2real.sysid.files import fit_document
    from sim2real.sysid.prediction import (
        MEASURED,
        SpreadSettings,
        cross_fit_spreads,
        fit_distribution,
        self_calibration,
        spread_of_fit,
    )
    from sim2real.sysid.problem import prepare_trial

    problem = FitProblem(block, ParameterSet.nominal().replace(START), FREE,
                         spec=ResidualSpec(horizon=HORIZON, weights=weights))
    settings = LMSettings(max_iterations=iterations)
    clock = time.perf_counter()
    result = fit_trials(problem, settings=settings, executor=executor)
    left_out = {failure.name for failure in result.failures}
    names = [r.name for r in block if r.name not in left_out]
    dt = float(result.params["sim.dt"])
    fold_fit = functools.partial(fit_trials, settings=settings, executor=executor, starts=1)
    cut = {r.name: cut_record(r, steps + 2) for r in block}  # each toss predicted to its outcome pose
    cross = cross_fit_spreads(problem, names, result.params, fold_fit, executor, draws, MEASURED,
                      SpreadSettings(seed=seed, level=level), folds, predicted=cut)
    spreads = list(cross.spreads)
    named = types.SimpleNamespace(uniform=cross.uniform)
    out = {"folds": folds, "fold_statuses": [fold.status for fold in cross.folds], "fit_status": result.status,
           "steps": steps, "draws": draws, "level": level, "seed": seed,
           "bands": _band_summary(spreads, named, level, draws, seed), "fit_s": time.perf_counter() - clock}
    if later:
        calibration = self_calibration(spreads, level).calibration
        dist = fit_distribution(fit_document(result), "the block's fit", allow_unconverged=True,
                                allow_undetermined=True)
        later_trials = [prepare_trial(cut_record(r, steps + 2), dt) for r in _held_out_half(later, seed)[1]]
        later_draw, later_spreads = spread_of_fit(executor, dist, result.params, later_trials, draws,
                                                  np.random.default_rng(seed), "auto", "auto", noise=MEASURED)
        out["next_block"] = _band_summary(later_spreads, later_draw, level, draws, seed, calibration=calibration)
    return out


def flight_noise(npz: Path, clearance: float = 0.095) -> dict:
    """Pose scatter of the tosses in free flight (centre above ``clearance``, m): RMS of the positions
    about a parabola per axis (m) and of the orientations about a constant rotation rate (rad); the
    ratio of the two sets the README's orientation weight (1000 per m of position)."""
    import numpy as np
    from scipy.spatial.transform import Rotation

    data = np.load(npz)
    offsets, position, quaternion, t = data["traj_offsets"], data["position"], data["quaternion"], data["t"]
    position_rows, rotation_rows, segments = [], [], 0
    for a, b in itertools.pairwise(offsets):
        n = int(np.argmax(position[a:b, 2] <= clearance)) if np.any(position[a:b, 2] <= clearance) else b - a
        if n < 8:
            continue
        segments += 1
        tt = t[a:a + n]
        for k in range(3):
            position_rows.append(position[a:a + n, k] - np.polyval(np.polyfit(tt, position[a:a + n, k], 2), tt))
        rotations = Rotation.from_quat(quaternion[a:a + n][:, [1, 2, 3, 0]])
        turned = (rotations * rotations[0].inv()).as_rotvec()  # a cube's free rotation: constant rate
        slope, intercept = np.polyfit(tt, turned, 1)
        rotation_rows.append(turned - (np.outer(tt, slope) + intercept))
    sigma_position = float(np.sqrt(np.mean(np.concatenate(position_rows) ** 2)))
    sigma_rotation = float(np.sqrt(np.mean(np.concatenate(rotation_rows) ** 2)))
    return {"segments": segments, "position_rms_m": sigma_position, "orientation_rms_rad": sigma_rotation,
            "orientation_weight_for_position_1000": 1000.0 * sigma_position / sigma_rotation}


def band_totals(per_block: list) -> dict:
    """The calibrated bands over every block: the share of held-out outcomes inside (leave one out, per block),
    the parameter-only share, x, y alone, the next block's, and per coordinate how many fell outside."""
    def total(part: str, key: str) -> int:
        return sum(b[part][key] for b in per_block if part in b)

    out: dict = {"level": per_block[0]["level"] if per_block else None, "target": [0.85, 0.95],
                 "steps": per_block[0]["steps"] if per_block else None,
                 "draws": per_block[0]["draws"] if per_block else None, "blocks": len(per_block)}
    for part in ("bands", "position_only", "next_block"):
        judged = total(part, "judged")
        out[part] = {"inside": total(part, "inside"), "judged": judged,
                     "share": total(part, "inside") / judged if judged else None,
                     "parameter_inside": total(part, "parameter_inside"),
                     "parameter_share": total(part, "parameter_inside") / judged if judged else None,
                     "blocks_missing_level": sum(b[part]["misses_level"] for b in per_block if part in b),
                     "outside_per_coordinate": {axis: sum(b[part]["per_coordinate"][axis]["outside"]
                                                          for b in per_block if part in b)
                                                for axis in ("x_mm", "y_mm", "yaw_deg")},
                     "several_modes": sum(len(b[part]["several_modes"]) for b in per_block if part in b)}
    share = out["bands"]["share"]
    out["within_target"] = share is not None and 0.85 <= share <= 0.95
    return out


def _overlap(a: list[float] | None, b: list[float] | None) -> bool:
    return a is not None and b is not None and a[0] <= b[1] and b[0] <= a[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output)")
    parser.add_argument("--block", type=int, default=30, help="tosses per block (default 30)")
    parser.add_argument("--blocks", type=int, default=0, help="blocks to fit (default 0: all)")
    parser.add_argument("--all", action="store_true", help="also fit all tosses at once")
    parser.add_argument("--workers", type=int, default=2, help="processes per fit (default 2)")
    parser.add_argument("--iterations", type=int, default=LMSettings().max_iterations,
                        help="iteration limit per fit (default: the fit command's, 20)")
    parser.add_argument("--weights", default=WEIGHTS, help=f"residual weights (default {WEIGHTS}, the README's)")
    parser.add_argument("--horizon", type=int, default=HORIZON,
                        help=f"fit horizon, steps (default {HORIZON}, the README's; 1: one-step predictions)")
    parser.add_argument("--no-bands", action="store_true",
                        help="skip the calibrated bands (per block: a fit on half, the other half's outcome "
                             f"{BAND_STEPS} steps on as a spread, its {100 * BAND_LEVEL:g} %% band calibrated)")
    parser.add_argument("--band-draws", type=int, default=BAND_DRAWS,
                        help=f"parameter sets drawn per held-out toss (default {BAND_DRAWS})")
    parser.add_argument("--cross-fit", type=int, default=CROSS_FOLDS, metavar="K",
                        help="also calibrate each block's band by cross-fitting all its tosses in K folds (default "
                             f"{CROSS_FOLDS}; 0: not)")
    parser.add_argument("--band-seed", type=int, default=BAND_SEED,
                        help=f"seed of the half held out and of the draws (default {BAND_SEED}, the fit command's)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)
    weights = Weights.parse(args.weights)
    count = len(load_cube_tosses(NPZ).offsets) - 1
    with tempfile.TemporaryDirectory() as tmp:
        import_cube_tosses(NPZ, Path(tmp) / "tosses", f"0-{count - 1}")
        records = [read_trial(d) for d in sorted((Path(tmp) / "tosses").glob("toss_*"))]
    blocks = [records[k:k + args.block] for k in range(0, len(records) - args.block + 1, args.block)]
    if args.blocks:
        blocks = blocks[:args.blocks]
    results = []
    for k, block in enumerate(blocks):
        held = blocks[(k + 1) % len(blocks)] if len(blocks) > 1 else []
        entry = {"block": k, "tosses": f"{k * args.block}-{k * args.block + len(block) - 1}",
                 **_block_fit(block, held, args.workers, args.iterations, weights, args.horizon)}
        results.append(entry)
        print(f"block {k}: side {entry['side_m']:.4f} m ({100 * entry['side_error']:+.1f} %), std "
              f"{entry['side_std_m']:.4f}, edge radius {1000 * entry['edge_radius_m']:.1f} mm, {entry['status']}, "
              f"{entry['stop_reason']}, {entry['wall_s']:.0f} s",
              file=sys.stderr, flush=True)
    bands = None
    cross_bands: list = []
    if not args.no_bands:
        bands = []
        executor = LocalExecutor(args.workers)
        try:
            for k, block in enumerate(blocks):
                later = blocks[k + 1] if k + 1 < len(blocks) else None
                clock = time.perf_counter()
                entry = {"block": k, "tosses": results[k]["tosses"],
                         **block_bands(block, executor, args.iterations, weights, args.band_draws, BAND_LEVEL,
                                       args.band_seed, BAND_STEPS, later)}
                entry["wall_s"] = time.perf_counter() - clock
                bands.append(entry)
                b = entry["bands"]
                print(f"block {k} bands: calibrated {b['inside']}/{b['judged']}, parameter-only "
                      f"{b['parameter_inside']}/{b['judged']}, x/y discrepancy {1000 * b['discrepancy']['x_m']:.1f}/"
                      f"{1000 * b['discrepancy']['y_m']:.1f} mm, quantile {b['quantile']:.2f}, "
                      f"{entry['wall_s']:.0f} s", file=sys.stderr, flush=True)
                if args.cross_fit:
                    cross = block_bands_cross(block, executor, args.iterations, weights, args.band_draws, BAND_LEVEL,
                                              args.band_seed, BAND_STEPS, later, args.cross_fit)
                    cross_bands.append({"block": k, "tosses": results[k]["tosses"], **cross})
                    c = cross["bands"]
                    print(f"block {k} cross-fitted bands: {c['inside']}/{c['judged']}, quantile {c['quantile']:.2f}, "
                          f"{cross['fit_s']:.0f} s", file=sys.stderr, flush=True)
        finally:
            executor.close()
    sides = [r["side_m"] for r in results]
    intervals = [r["side_ci95_m"] for r in results]
    report = {
        "benchmark": "cube_toss", "measured_side_m": MEASURED_SIDE, "block": args.block, "blocks": len(results),
        "horizon": args.horizon, "workers": args.workers, "weights": weights.as_dict(),
        "flight_noise": flight_noise(NPZ),
        "side_min_m": min(sides), "side_max_m": max(sides), "side_median_m": statistics.median(sides),
        "side_spread_std_m": statistics.stdev(sides) if len(sides) > 1 else None,
        "edge_radius_min_m": min(r["edge_radius_m"] for r in results),
        "edge_radius_max_m": max(r["edge_radius_m"] for r in results),
        "within_3_percent": sum(abs(r["side_error"]) <= 0.03 for r in results),
        "converged": sum(r["status"] == "converged" for r in results),
        "covering_measured": sum(ci is not None and ci[0] <= MEASURED_SIDE <= ci[1] for ci in intervals),
        "interval_pairs_overlapping": sum(_overlap(a, b) for i, a in enumerate(intervals) for b in intervals[i + 1:]),
        "interval_pairs": len(intervals) * (len(intervals) - 1) // 2,
        "held_out_improved": sum((r.get("held_out_40_step_rms_m") or {}).get("fitted", 1.0)
                                 < (r.get("held_out_40_step_rms_m") or {}).get("start", 0.0) for r in results),
        "per_block": results,
    }
    if bands is not None:
        report["bands"] = band_totals(bands)
        report["bands"]["per_block"] = bands
    if cross_bands:
        report["bands_cross"] = band_totals(cross_bands)
        report["bands_cross"]["folds"] = args.cross_fit
        report["bands_cross"]["per_block"] = cross_bands
    if args.all:
        report["all_tosses"] = _block_fit(records, [], args.workers, args.iterations, weights, args.horizon)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
