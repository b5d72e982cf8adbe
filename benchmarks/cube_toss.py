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
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

from sim2real.data import cube_toss_npz
from sim2real.params import ParameterSet
from sim2real.sysid import FitProblem, LMSettings, ResidualSpec, Weights, fit_trials
from sim2real.trials import read_trial
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
    if args.all:
        report["all_tosses"] = _block_fit(records, [], args.workers, args.iterations, weights, args.horizon)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
