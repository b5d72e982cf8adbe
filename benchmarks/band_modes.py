"""A bistable scene (issue 55): does a predicted spread report the two ways a flat block may turn, with the
right probabilities?

The block and probe of ``tests/fixtures/flat_blocks.py`` (a 99 x 99 x 9.5 mm steel-like block, 0.73 kg,
its centre of mass 4 mm off the centre line, a 3.1 mm probe; the fixture's hidden values) are pushed
straight at the block's face (block yaw 0, push along its normal) on a line
:data:`BIAS_M` (0.15 mm) beside the centre of mass, at 0.2 m/s. The probe line's offset from the centre of
mass decides which way the block turns; on a long push the turn runs away until the probe leaves the
block, so that sub-millimetre offsets decide between two outcomes about 160° of yaw apart.

* **Realities.** ``--realities`` (50) executions of that push, each with a hidden lateral offset of the
  contact drawn from N(0, 0.3 mm) (reality ``k`` from seed ``k``), simulated with the fixture's truth by
  ``planar_pushes.simulate``; the recorded final position gets 0.3 mm of motion-capture noise. Their share
  turning left (yaw > 0) is the frequency to predict (about Φ(-0.15 / 0.3) = 31 %).
* **Prediction.** The planned push (no hidden offset) is written as one trial (``planar_pushes.write_pushes``)
  and predicted as users do, from a fit.json written by hand around the truth with a small uncertainty
  (:data:`FIT_STD`)::

      sim2real replay PUSH --spread fit.json --draws N --start-noise 0.3,0 --seed 0 --out spread

  ``--start-noise 0.3,0``: each draw's start moved by N(0, 0.3 mm) in x and y (y is the hidden lateral
  offset; x, along the push, barely matters), and its final position given 0.3 mm of noise, as the
  realities' are.

Per scene (a probe travel and a number of draws) reported: the modes of ``spread.json`` (probability,
centre, scale), the predicted probability of each turn direction (the modes' probabilities, and the share
of draws) beside the realities' frequency, the mean log score of the realities under the predicted mixture
(:func:`sim2real.sysid.prediction.bands.log_score`, no discrepancy: the model is right here) beside that of one normal
fitted to all draws, and for each reality its nearest mode (:func:`sim2real.sysid.prediction.bands.nearest_mode`) and
whether that mode turns the way the reality did. Where :func:`~sim2real.sysid.prediction.bands.find_modes` finds
one mode, the reason: its best cut's empty gap (in standard deviations of the wider part) against the
least it asks (``max(MIN_GAP, null_gap)``), and Ashman's D against ``MIN_SEPARATION``. The scenes: the
fixture's 0.12 m travel (the block turns by an amount the offset sets, one mode is right) and 0.45, 0.6 and
0.8 m, each with 30 and 100 draws. Done means: on the primary scene (0.8 m, 100 draws) two modes, each
direction's predicted probability within 15 percentage points of the realities' frequency.

``python -m benchmarks.band_modes --json [--realities N] [--workers W]`` (about 1 min on two cores).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fixtures import flat_blocks, planar_pushes

from sim2real.cli import main as cli
from sim2real.params import ParameterSet
from sim2real.sysid.prediction import bands, final_outcome
from sim2real.trials.trial_object import TrialObject

#: The probe line passes this far beside the centre of mass (m): the block turns right (yaw < 0) more often.
BIAS_M = 1.5e-4
#: Hidden lateral offset of each reality's contact (standard deviation, m) and the recorded poses' noise (m).
OFFSET_STD_M = 3e-4
NOISE_M = 3e-4
#: Standard deviations of the hand-written fit around the truth.
FIT_STD = {"contact.mu_table": 0.005, "contact.mu_pusher": 0.01, "contact.support_ratio": 0.01, "box.com_y": 5e-5}
TRAVELS = (0.12, 0.45, 0.6, 0.8)
DRAWS = (30, 100)
PRIMARY = (0.8, 100)
#: Done means: each turn direction's predicted probability within this of the realities' frequency.
TOLERANCE = 0.15


def truth() -> ParameterSet:
    return ParameterSet.nominal().replace({**flat_blocks.GEOMETRY, **flat_blocks.TRUTH})


def planned(travel: float) -> planar_pushes.Push:
    """The push as planned: yaw 0, along the face normal, :data:`BIAS_M` beside the centre of mass."""
    return planar_pushes.Push(0.0, 0.0, flat_blocks.TRUTH["box.com_y"] + BIAS_M, flat_blocks.SPEED, travel)


def reality(travel: float, seed: int) -> dict[str, Any]:
    """One execution of the planned push with its hidden lateral offset: ``[x, y, yaw]`` as recorded."""
    rng = np.random.default_rng(seed)
    offset = float(rng.normal(0.0, OFFSET_STD_M))
    push = planned(travel)
    _, states, _ = planar_pushes.simulate(planar_pushes.Push(push.yaw, push.angle, push.offset + offset, push.speed,
                                                             push.travel), truth())
    size = [flat_blocks.GEOMETRY[f"box.size_{a}"] for a in "xyz"]
    outcome = final_outcome(states[:, 0:3], states[:, 3:7], size)
    outcome[:2] += rng.normal(0.0, NOISE_M, 2)
    return {"seed": seed, "hidden_offset_mm": 1e3 * offset, "outcome": [float(v) for v in outcome]}


def _reality_task(args: tuple[float, int]) -> dict[str, Any]:
    return reality(*args)


def write_fit(path: Path) -> Path:
    """A fit.json centred on the truth with the uncertainty :data:`FIT_STD` (uncorrelated)."""
    names = list(FIT_STD)
    document = {"status": "converged", "problems": [], "values": {n: flat_blocks.TRUTH[n] for n in names},
                "start_values": {n: flat_blocks.TRUTH[n] for n in names}, "std": dict(FIT_STD), "ci95": {},
                "correlation": {"names": names, "matrix": np.eye(len(names)).tolist()}, "trace": [], "tied": [],
                "data": {"uncertainty": {"method": "written by benchmarks.band_modes", "clusters": 20,
                                         "quantile": float(stats.t.ppf(0.975, 19))}}}
    path.write_text(json.dumps(document))
    return path


def _quiet(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(out):
        code = cli(list(argv))
    return code, out.getvalue().strip().splitlines()[0] if out.getvalue().strip() else ""


def predict(root: Path, travel: float, draws: int, seed: int, workers: int) -> tuple[dict[str, Any], float]:
    """``replay --spread`` of the planned push: its spread.json trial entry, and the wall time."""
    root.mkdir(parents=True)
    run = root / f"push_{travel:g}"
    obj = TrialObject(dict(flat_blocks.GEOMETRY), "rod", "steel")
    planar_pushes.write_pushes(run, (planned(travel),), truth(), obj=obj)
    fit = write_fit(root / "fit.json")
    out = root / f"spread_{travel:g}_{draws}"
    clock = time.perf_counter()
    code, line = _quiet("replay", str(run), "--spread", str(fit), "--draws", str(draws), "--start-noise",
                        f"{1e3 * OFFSET_STD_M:g},0", "--seed", str(seed), "--workers", str(workers), "--out", str(out))
    wall = time.perf_counter() - clock
    spread = json.loads((out / "spread.json").read_text())
    return {"exit": code, "summary": line, **spread["trials"][0]}, wall


def _modes(entry: dict[str, Any]) -> list[bands.Mode]:
    keys = ("x_m", "y_m", "yaw_deg")
    return [bands.Mode(m["probability"], np.array([m[k]["centre"] for k in keys]),
                       np.array([m[k]["scale"] for k in keys])) for m in entry["modes"]]


def why_one_mode(predicted: np.ndarray) -> dict[str, Any]:
    """The split :func:`sim2real.sysid.prediction.bands.find_modes` considered first, and which of its tests refused it
    (:func:`sim2real.sysid.prediction.bands.split_test`)."""
    test = bands.split_test(predicted)
    yaw = np.sort(predicted[:, 2])
    count = predicted.shape[0]
    return {**test, "widest_yaw_gap_deg": float(np.max(np.diff(yaw))) if count > 1 else None,
            "draws_between": int(np.sum(np.abs(predicted[:, 2]) < 0.5 * np.median(np.abs(predicted[:, 2]))))}


def scene(entry: dict[str, Any], realities: list[dict[str, Any]], travel: float, draws: int) -> dict[str, Any]:
    """The figures of one scene (see the module docstring)."""
    predicted = np.array(entry["predicted"])
    modes = _modes(entry)
    reals = np.array([r["outcome"] for r in realities])
    tau = np.zeros(3)
    left_modes = sum(m.probability for m in modes if m.centre[2] > 0)
    frequency = float(np.mean(reals[:, 2] > 0))
    single = bands.Mode(1.0, predicted.mean(axis=0), np.maximum(predicted.std(axis=0), bands.RESOLUTION))
    scores = [bands.log_score(r, modes, tau) for r in reals]
    single_scores = [bands.log_score(r, [single], tau) for r in reals]
    nearest = [bands.nearest_mode(r, modes, tau)[0] for r in reals]
    agree = [bool(np.sign(modes[j].centre[2]) == np.sign(r[2])) for j, r in zip(nearest, reals, strict=True)]
    out: dict[str, Any] = {
        "travel_m": travel, "draws": draws, "working_draws": int(predicted.shape[0]), "replay_exit": entry["exit"],
        "modes": [{"probability": m.probability, "centre": [float(v) for v in m.centre],
                   "scale": [float(v) for v in m.scale]} for m in modes],
        "predicted_left_modes": left_modes, "predicted_left_draws": float(np.mean(predicted[:, 2] > 0)),
        "realities_left": frequency,
        "difference_pp": 100 * abs(left_modes - frequency),
        "within_tolerance": len(modes) == 2 and abs(left_modes - frequency) <= TOLERANCE,
        "mean_log_score": float(np.mean(scores)), "mean_log_score_one_normal": float(np.mean(single_scores)),
        "median_log_score": float(np.median(scores)), "median_log_score_one_normal": float(np.median(single_scores)),
        "nearest_mode": nearest, "nearest_mode_same_turn": int(sum(agree)), "realities": len(realities),
        "realities_yaw_deg": {"min": float(reals[:, 2].min()), "max": float(reals[:, 2].max()),
                              "between": int(np.sum(np.abs(reals[:, 2]) < 0.5 * np.median(np.abs(reals[:, 2]))))}}
    if len(modes) < 2:
        out["why_one_mode"] = why_one_mode(predicted)
    return out


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output)")
    parser.add_argument("--realities", type=int, default=50, help="realities 0..N-1 per scene (default 50)")
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the predicted spread (default 0)")
    args = parser.parse_args()
    started = time.perf_counter()
    workers = max(1, args.workers)
    scenes, outcomes = [], {}
    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(max_workers=workers) as pool:
        root = Path(tmp)
        for travel in TRAVELS:
            clock = time.perf_counter()
            realities = list(pool.map(_reality_task, [(travel, k) for k in range(args.realities)]))
            realities_s = time.perf_counter() - clock
            for draws in DRAWS:
                entry, wall = predict(root / f"{travel:g}_{draws}", travel, draws, args.seed, workers)
                figures = scene(entry, realities, travel, draws)
                figures.update({"predict_s": round(wall, 2), "realities_s": round(realities_s, 2)})
                scenes.append(figures)
                print(f"travel {travel} m, {draws} draws: {len(figures['modes'])} mode(s) "
                      f"{[round(m['probability'], 2) for m in figures['modes']]}, predicted left "
                      f"{figures['predicted_left_modes']:.2f}, realities {figures['realities_left']:.2f} "
                      f"({wall:.0f} s)", file=sys.stderr, flush=True)
            outcomes[f"{travel:g}"] = realities
    primary = next(s for s in scenes if (s["travel_m"], s["draws"]) == PRIMARY)
    summary = {"primary": {k: primary[k] for k in ("travel_m", "draws", "modes", "predicted_left_modes",
                                                   "predicted_left_draws", "realities_left", "difference_pp",
                                                   "within_tolerance", "mean_log_score", "mean_log_score_one_normal",
                                                   "median_log_score", "median_log_score_one_normal",
                                                   "nearest_mode_same_turn", "realities")},
               "scenes_with_two_modes": [[s["travel_m"], s["draws"]] for s in scenes if len(s["modes"]) == 2],
               "scenes_within_tolerance": [[s["travel_m"], s["draws"]] for s in scenes if s["within_tolerance"]]}
    print(json.dumps({"benchmark": "band_modes",
                      "scene": {"truth": flat_blocks.TRUTH, "bias_mm": 1e3 * BIAS_M,
                                "hidden_offset_std_mm": 1e3 * OFFSET_STD_M, "noise_mm": 1e3 * NOISE_M,
                                "fit_std": FIT_STD, "speed_m_s": flat_blocks.SPEED, "tolerance": TOLERANCE,
                                "expected_left": float(stats.norm.cdf(-BIAS_M / OFFSET_STD_M))},
                      "summary": summary, "wall_s": round(time.perf_counter() - started, 1), "scenes": scenes,
                      "realities": outcomes},
                     indent=2))


if __name__ == "__main__":
    run()
