"""Calibrated prediction bands on known truth with model error the fit does not contain (issue 55).

Per seed, planar pushes (``tests/fixtures/planar_pushes.py``: a 5 mm rod pushes a 0.10 x 0.08 x
0.0095 m plate off centre and at angles, then stops; the plate slides on and stops) are simulated by
a model the fitted one cannot represent:

* each trial has its own table friction, ``contact.mu_table`` = 0.25 x (1 + U(-15 %, +15 %)) (the
  fit has one for all);
* the recorded plate poses are in a tracking frame offset from the rod's by a fixed shift of
  U(1, 3) mm in a random direction and a turn of ±U(0.7, 1.3)° about the workspace centre (0.45, 0)
  (one offset per seed, for every trial of it);
* motion-capture noise of 0.3 mm and 0.29° (5 mrad per rotation-vector component) on every
  recorded plate pose.

The other hidden values are the fixture's (``contact.mu_pusher`` 0.45, ``contact.support_ratio``
0.6). Pushes are drawn per seed (plate yaw, direction within ±0.45 rad of the face normal, offset
within ±3 cm, speed 0.2-0.4 m/s): 8 training, 12 calibration (held out of the fit), 8 test (used by
nothing but the final check). Fitted as a user would, from the nominal start with the object stored
in the trials (no ``--set``)::

    sim2real fit TRAIN --free contact.mu_table,contact.mu_pusher,contact.support_ratio --horizon trial \\
        --max-iterations 40 --validate CAL --spread-draws 30 --seed SEED --out fit.yaml
    sim2real replay TEST --spread fit.json --draws 30 --seed SEED --out spread

(start noise ``auto``: measured in each recording). Reported per seed and overall: the share of test
outcomes inside the calibrated 90 % band and inside the parameter-only band (``spread.json`` per
trial ``inside`` and ``parameter_inside``), the fit's own leave-one-out check on its calibration
trials, the median band half-width and full width of ``x`` and ``y`` beside the median prediction
error ``|real - median|`` per coordinate and the median distance of the real final centre from the
draws' median one (a 90 % band of a normal error has a half-width of 2.44 median errors, a full width
of 4.88: a half-width beyond 3 median errors is called vacuous), the discrepancy τ and
quantile q, the fit's exit status and problems, and wall times. Target: the calibrated band holds
85-95 % of the test outcomes over the seeds, the parameter-only band far fewer.

``python -m benchmarks.band_truth --json [--seeds N] [--workers W]`` (about 1 min per seed on one
core; progress on stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fixtures import planar_pushes

from sim2real.cli import main as cli
from sim2real.spatial import from_axis_angle, multiply, rotate
from sim2real.sysid.prediction import bands
from sim2real.trials import PlatformRecord, PoseSeries, TrialRecord, read_trial, write_trial
from sim2real.trials.trial_object import TrialObject

FREE = "contact.mu_table,contact.mu_pusher,contact.support_ratio"
MU_SPREAD = 0.15  # per-trial table friction: mean x (1 + U(-MU_SPREAD, MU_SPREAD))
SHIFT_MM = (1.0, 3.0)  # tracking-frame shift, mm (uniform magnitude, random direction)
TURN_DEG = (0.7, 1.3)  # tracking-frame turn, deg (uniform magnitude, random sign)
PIVOT = np.array([0.45, 0.0, 0.0])  # the turn is about the workspace centre (the plates start there)
NOISE_M, NOISE_RAD = 3e-4, 5e-3  # per-sample motion-capture noise (m; rad per rotation-vector component)
SETS = {"train": 8, "cal": 12, "test": 8}
DRAWS = 30
LEVEL = 0.9
#: A band whose half-width exceeds this many median prediction errors is vacuous (normal errors: 2.44).
VACUOUS = 3.0


def _push(rng: np.random.Generator) -> planar_pushes.Push:
    return planar_pushes.Push(float(rng.uniform(-np.pi, np.pi)), float(rng.uniform(-0.45, 0.45)),
                              float(rng.uniform(-0.03, 0.03)), float(rng.uniform(0.2, 0.4)))


def frame_offset(rng: np.random.Generator) -> dict[str, float]:
    """The seed's tracking-frame offset: shift (m, world x and y) and turn about :data:`PIVOT` (rad)."""
    shift, direction = 1e-3 * rng.uniform(*SHIFT_MM), rng.uniform(-np.pi, np.pi)
    turn = math.radians(rng.uniform(*TURN_DEG)) * rng.choice([-1.0, 1.0])
    return {"dx_m": float(shift * np.cos(direction)), "dy_m": float(shift * np.sin(direction)), "turn_rad": float(turn)}


def _in_tracking_frame(poses: PoseSeries, frame: dict[str, float]) -> PoseSeries:
    """Box poses as the offset tracking frame records them."""
    turn = from_axis_angle(np.array([0.0, 0.0, 1.0]), frame["turn_rad"])
    position = PIVOT + rotate(turn, poses.position - PIVOT) + np.array([frame["dx_m"], frame["dy_m"], 0.0])
    return PoseSeries(poses.t, position, multiply(turn, poses.quaternion))


def write_set(root: Path, name: str, pushes: list[planar_pushes.Push], mus: list[float], frame: dict[str, float],
              seed: int) -> Path:
    """Simulate ``pushes`` (each under its own table friction) with the fixture, noise on the plate poses, and
    write them as ``root/name`` with the plate poses in the offset tracking frame."""
    obj = TrialObject(dict(planar_pushes.GEOMETRY), "rod", "plate")
    scratch, run = root / f"{name}_sim", root / name
    for k, (push, mu) in enumerate(zip(pushes, mus, strict=True)):
        truth = planar_pushes.params({**planar_pushes.TRUTH, "contact.mu_table": mu})
        planar_pushes.write_pushes(scratch, (push,), truth, NOISE_M, NOISE_RAD, seed + k, obj=obj,
                                   prefix=f"{name}_{k:02d}")
        simulated = read_trial(scratch / f"{name}_{k:02d}_00").platforms["real"]
        platform = PlatformRecord(box_pose=_in_tracking_frame(simulated.box_pose, frame),
                                  pusher_pose=simulated.pusher_pose)
        write_trial(run, TrialRecord(f"{name}_{k:02d}", {"real": platform}, None,
                                     {"complete": True, "object": obj.as_dict()}))
    return run


def write_seed(root: Path, seed: int, sets: dict[str, int] | None = None) -> tuple[dict[str, Path], dict[str, Any]]:
    """One seed's training, calibration and test runs, and its hidden model error."""
    rng = np.random.default_rng(5500 + seed)
    frame = frame_offset(rng)
    runs, mus = {}, {}
    for k, (name, count) in enumerate((sets or SETS).items()):
        pushes = [_push(rng) for _ in range(count)]
        mus[name] = [float(planar_pushes.TRUTH["contact.mu_table"] * (1 + rng.uniform(-MU_SPREAD, MU_SPREAD)))
                     for _ in range(count)]
        runs[name] = write_set(root, name, pushes, mus[name], frame, 1000 * seed + 100 * k)
    return runs, {"frame": frame, "mu_table": mus}


def _quiet(*argv: str) -> int:
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        return cli(list(argv))


def band_figures(spread: dict[str, Any]) -> dict[str, Any]:
    """Per coordinate of the position (x, y pooled) and of the yaw: the median calibrated band half-width and
    width, parameter-only width, and the median prediction error |real - median| over the trials."""
    out: dict[str, Any] = {}
    distances = [math.hypot(t["outcome"]["x_m"]["real"] - t["outcome"]["x_m"]["median"],
                            t["outcome"]["y_m"]["real"] - t["outcome"]["y_m"]["median"])
                 for t in spread["trials"] if t["outcome"]["x_m"]["median"] is not None]
    for label, keys in (("position_m", ("x_m", "y_m")), ("yaw_deg", ("yaw_deg",))):
        widths, parameter, errors = [], [], []
        for trial in spread["trials"]:
            for key in keys:
                entry = trial["outcome"][key]
                if None in entry["band"] or entry["median"] is None:
                    continue
                widths.append(entry["band"][1] - entry["band"][0])
                parameter.append(entry["parameter_band"][1] - entry["parameter_band"][0])
                errors.append(abs(entry["real"] - entry["median"]))
        if not widths:
            out[label] = None
            continue
        width, error = statistics.median(widths), statistics.median(errors)
        out[label] = {"median_width": width, "median_half_width": width / 2,
                      "median_parameter_width": statistics.median(parameter), "median_error": error,
                      "half_width_over_error": width / 2 / error if error > 0 else None}
        if label == "position_m" and distances:
            distance = statistics.median(distances)
            out[label].update({"median_distance_error": distance,
                               "half_width_over_distance_error": width / 2 / distance if distance > 0 else None})
    return out


#: How the band is calibrated: on the held-out calibration set (split), or by cross-fitting the
#: training and calibration sets together in :data:`FOLDS` folds (both fitted).
PROTOCOLS = ("split", "cross")
FOLDS = 5


def fit_arguments(runs: dict[str, Path], protocol: str) -> list[str]:
    """The fit's trials and calibration options of ``protocol``."""
    if protocol == "split":
        return [str(runs["train"]), "--validate", str(runs["cal"])]
    return [str(runs["train"]), str(runs["cal"]), "--cross-fit", str(FOLDS)]


def one_seed(seed: int, protocols: tuple[str, ...] = ("split",)) -> list[dict[str, Any]]:
    """Data of one seed, then per protocol its fit and test spread (see the module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        clock = time.perf_counter()
        runs, hidden = write_seed(root, seed)
        generate_s = time.perf_counter() - clock
        return [_protocol(root / protocol, runs, hidden, seed, protocol, generate_s) for protocol in protocols]


def _protocol(root: Path, runs: dict[str, Path], hidden: dict[str, Any], seed: int, protocol: str,
              generate_s: float) -> dict[str, Any]:
    """Fit and test spread of one seed's data under ``protocol``."""
    root.mkdir()
    out = root / "fit.yaml"
    clock = time.perf_counter()
    code = _quiet("fit", *fit_arguments(runs, protocol), "--free", FREE, "--horizon", "trial",
                  "--max-iterations", "40", "--spread-draws", str(DRAWS), "--level", str(LEVEL),
                  "--seed", str(seed), "--out", str(out))
    fit_s = time.perf_counter() - clock
    report = json.loads(out.with_suffix(".json").read_text()) if out.with_suffix(".json").is_file() else {}
    clock = time.perf_counter()
    replay = _quiet("replay", str(runs["test"]), "--spread", str(out.with_suffix(".json")), "--draws",
                    str(DRAWS), "--level", str(LEVEL), "--seed", str(seed), "--out", str(root / "spread"))
    replay_s = time.perf_counter() - clock
    spread_file = root / "spread" / "spread.json"
    spread = json.loads(spread_file.read_text()) if spread_file.is_file() else {}
    in_fit = (report.get("validation") or {}).get("spread") or {}
    calibration = in_fit.get("calibration") or {}
    tau = calibration.get("discrepancy") or {}
    entry = {
        "seed": seed, "protocol": protocol,
        "hidden": {"frame": hidden["frame"],
                   "mu_table_range": [min(v for m in hidden["mu_table"].values() for v in m),
                                      max(v for m in hidden["mu_table"].values() for v in m)]},
        "fit": {"exit": code, "status": report.get("status"), "problems": report.get("problems"),
                "values": {n: (report.get("values") or {}).get(n) for n in FREE.split(",")},
                "std": {n: (report.get("std") or {}).get(n) for n in FREE.split(",")},
                "calibration_trials": calibration.get("trials"),
                "calibration_check": in_fit.get("check"),
                "calibration_parameter_inside": (in_fit.get("check") or {}).get("parameter_inside"),
                "discrepancy": {"x_mm": 1e3 * tau["x_m"], "y_mm": 1e3 * tau["y_m"], "yaw_deg": tau["yaw_deg"]}
                if tau else None, "quantile": calibration.get("quantile"),
                "calibrated": calibration.get("calibrated")},
        "test": {"exit": replay, "calibrated": spread.get("calibrated"), "inside": spread.get("inside"),
                 "parameter_inside": spread.get("parameter_inside"), "judged": spread.get("judged"),
                 "modes": [len(t["modes"]) for t in spread.get("trials", [])], "uniform": spread.get("uniform"),
                 "log_score": spread.get("log_score"), "summary": spread.get("summary"),
                 "bands": band_figures(spread) if spread else None},
        "generate_s": round(generate_s, 2), "fit_s": round(fit_s, 2), "replay_s": round(replay_s, 2)}
    test = entry["test"]
    print(f"seed {seed} ({protocol}): fit exit {code} ({fit_s:.0f} s), test inside {test['inside']}/{test['judged']} "
          f"(parameter-only {test['parameter_inside']}), tau {entry['fit']['discrepancy']}", file=sys.stderr,
          flush=True)
    return entry


def _share(inside: int, judged: int) -> float | None:
    return inside / judged if judged else None


#: Short names of the fit's problems (substrings of its one-line problems).
PROBLEM_KINDS = {"is undetermined": "undetermined parameter", "independence of the start is unchecked":
                 "alternative starts not evaluated", "depends on the start": "optimum depends on the start",
                 "prediction band": "prediction band", "did not converge": "not converged",
                 "held-out": "held-out error rose", "at a bound": "at a bound",
                 "residual rows left out": "residual rows left out (degraded solver steps)"}


def problem_kinds(seeds: list[dict[str, Any]]) -> dict[str, int]:
    """How many fits name each kind of problem."""
    counts: dict[str, int] = {}
    for seed in seeds:
        kinds = {next((k for s, k in PROBLEM_KINDS.items() if s in p), "other") for p in seed["fit"]["problems"] or []}
        for kind in kinds:
            counts[kind] = counts.get(kind, 0) + 1
    return counts


def summary(seeds: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over the seeds."""
    tests = [s["test"] for s in seeds if s["test"]["judged"]]
    inside = sum(t["inside"] for t in tests)
    parameter = sum(t["parameter_inside"] for t in tests)
    judged = sum(t["judged"] for t in tests)
    checks = [s["fit"]["calibration_check"] for s in seeds if s["fit"]["calibration_check"]]
    pooled: dict[str, Any] = {}
    for label in ("position_m", "yaw_deg"):
        figures = [t["bands"][label] for t in tests if t["bands"] and t["bands"][label]]
        if figures:
            half = statistics.median(f["median_half_width"] for f in figures)
            error = statistics.median(f["median_error"] for f in figures)
            ratios = [f["half_width_over_error"] for f in figures if f["half_width_over_error"] is not None]
            pooled[label] = {"median_half_width": half, "median_width": 2 * half, "median_error": error,
                             "median_parameter_width": statistics.median(f["median_parameter_width"] for f in figures),
                             "half_width_over_error": statistics.median(ratios) if ratios else None}
            distance = [f["half_width_over_distance_error"] for f in figures
                        if f.get("half_width_over_distance_error") is not None]
            if distance:
                pooled[label]["median_distance_error"] = statistics.median(f["median_distance_error"] for f in figures
                                                                           if "median_distance_error" in f)
                pooled[label]["half_width_over_distance_error"] = statistics.median(distance)
    taus = [s["fit"]["discrepancy"] for s in seeds if s["fit"]["discrepancy"]]
    share = _share(inside, judged)
    parameter_share = _share(parameter, judged)
    ratio = (pooled.get("position_m") or {}).get("half_width_over_error")
    exits = sorted({s["fit"]["exit"] for s in seeds})
    return {
        "seeds": len(seeds), "level": LEVEL, "draws": DRAWS, "sets": SETS,
        "fits_exit": {str(c): sum(s["fit"]["exit"] == c for s in seeds) for c in exits},
        "fits_with_problems": sum(bool(s["fit"]["problems"]) for s in seeds),
        "problem_kinds": problem_kinds(seeds),
        "test_calibrated": sum(bool(t["calibrated"]) for t in tests),
        "test_inside": inside, "test_parameter_inside": parameter, "test_judged": judged,
        "test_inside_share": share, "test_parameter_inside_share": parameter_share,
        "per_seed_inside_share": [_share(t["inside"], t["judged"]) for t in tests],
        "calibration_check_inside": sum(c["inside"] for c in checks),
        "calibration_check_judged": sum(c["judged"] for c in checks),
        "calibration_check_parameter_inside": sum(c["parameter_inside"] for c in checks),
        "bands": pooled,
        "median_discrepancy": {k: statistics.median(t[k] for t in taus) for k in ("x_mm", "y_mm", "yaw_deg")}
        if taus else None,
        "median_quantile": statistics.median(s["fit"]["quantile"] for s in seeds if s["fit"]["quantile"] is not None)
        if any(s["fit"]["quantile"] is not None for s in seeds) else None,
        "targets": {"calibrated_share_in_85_95": share is not None and 0.85 <= share <= 0.95,
                    "parameter_only_share_below_calibrated_by": None if share is None or parameter_share is None
                    else share - parameter_share,
                    "position_band_not_vacuous": ratio is not None and ratio <= VACUOUS},
        "median_fit_s": statistics.median(s["fit_s"] for s in seeds),
        "median_replay_s": statistics.median(s["replay_s"] for s in seeds),
        "median_generate_s": statistics.median(s["generate_s"] for s in seeds)}


def ideal_reference(calibration: int, test: int, repeats: int = 4000, seed: int = 0) -> dict[str, float]:
    """The same band (:func:`sim2real.sysid.prediction.bands.calibrate` on ``calibration`` trials, judged on ``test``)
    when the model is right but for independent normal errors beyond the draws: its coverage and the median
    over repeats of its position half-width over the median position error (what a band that is neither too
    wide nor too narrow shows here: the box spans three coordinates, q is a high rank of few scores)."""
    rng = np.random.default_rng(seed)
    scale, error = np.array([5e-4, 5e-4, 0.5]), np.array([2e-3, 2e-3, 2.0])
    spread = np.sqrt(scale ** 2 + error ** 2)
    mode = bands.Mode(1.0, np.zeros(3), scale)
    inside, ratios, distance = [], [], []
    for _ in range(repeats):
        reals = list(rng.standard_normal((calibration, 3)) * spread)
        cal = bands.calibrate(reals, [[mode]] * calibration, LEVEL)
        half = cal.quantile * np.sqrt(scale ** 2 + cal.discrepancy ** 2)
        outcomes = rng.standard_normal((test, 3)) * spread
        inside += list(np.all(np.abs(outcomes) <= half, axis=1))
        ratios.append(float(half[0] / np.median(np.abs(outcomes[:, :2]))))
        distance.append(float(half[0] / np.median(np.hypot(outcomes[:, 0], outcomes[:, 1]))))
    return {"coverage": float(np.mean(inside)), "position_half_width_over_error": float(np.median(ratios)),
            "position_half_width_over_distance_error": float(np.median(distance)), "repeats": repeats}


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output)")
    parser.add_argument("--seeds", type=int, default=20, help="seeds 0..N-1 (default 20)")
    parser.add_argument("--workers", type=int, default=2, help="processes, one seed each (default 2)")
    parser.add_argument("--protocols", default=",".join(PROTOCOLS),
                        help=f"comma-separated, of {', '.join(PROTOCOLS)} (default both)")
    args = parser.parse_args()
    protocols = [p for p in args.protocols.split(",") if p]
    if not protocols or any(p not in PROTOCOLS for p in protocols):
        parser.error(f"--protocols: of {', '.join(PROTOCOLS)}")
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
        results = [entry for entries in pool.map(one_seed, range(args.seeds), [tuple(protocols)] * args.seeds)
                   for entry in entries]
    truth = {**planar_pushes.TRUTH, "mu_table_spread": MU_SPREAD, "frame_shift_mm": SHIFT_MM,
             "frame_turn_deg": TURN_DEG, "noise_mm_deg": [1e3 * NOISE_M, math.degrees(NOISE_RAD)]}
    calibration_trials = {"split": SETS["cal"], "cross": SETS["train"] + SETS["cal"]}
    by_protocol = {p: [r for r in results if r["protocol"] == p] for p in protocols}
    print(json.dumps({"benchmark": "band_truth", "truth": truth, "folds": FOLDS,
                      "summary": {p: summary(seeds) for p, seeds in by_protocol.items()},
                      "ideal_normal_reference": {p: ideal_reference(calibration_trials[p], SETS["test"])
                                                 for p in protocols},
                      "wall_s": round(time.perf_counter() - started, 1), "per_seed": by_protocol}, indent=2))


if __name__ == "__main__":
    run()
