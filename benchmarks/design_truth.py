"""Designed pushes against the standard sequence and random pushes, on known truth with model error (issue 59).

Per seed, hidden values are drawn (``contact.mu_table`` U(0.35, 0.65), ``contact.mu_pusher`` U(0.15, 0.45),
``contact.support_ratio`` U(0.5, 0.9)), and arm pushes of the standard box (0.5 kg, 11 x 13 x 21 cm) are
simulated under the PD law by a model the fitted one cannot represent: each trial has its own table friction,
the hidden value x (1 + U(-15 %, +15 %)), and every recorded box pose has motion-capture noise of 0.3 mm. The
trials are written as a user's recordings (no parameters in trial.json), then:

1. three standard pushes (0.30, 0.35, 0.40 m) are fitted from the nominal start::

       sim2real fit INIT --free contact.mu_table,contact.mu_pusher,contact.support_ratio --horizon trial \\
           --mode kinematic --max-iterations 40 --out init.yaml

2. three more pushes are chosen three ways: **designed** (``sim2real design --fit init.json -n 3 --no-topple``),
   **standard** (the sequence goes on: 0.45, 0.50, 0.30 m) and **random** (three feasible, non-tipping pushes
   drawn from the same push space, seeded);
3. each set of six is fitted as in 1.

Reported per seed and strategy: the 95 % interval width of each parameter (the whole bound range where the fit gives
none: not determined), whether it holds the hidden value (the per-trial friction's mean for ``contact.mu_table``),
the fit's exit status and problems, and for the designed pushes the forecast width beside the achieved one, and the
design's own forecast of as many random pushes from its feasible candidates against the designed ones
(``design.json`` ``random``). Over the seeds: the median over seeds of the median over parameters of the width
ratios standard / designed and random / designed (target: at least 2), and each strategy's coverage of the hidden
values (target: the designed one's not below the others').

Two scenarios (``--scenario``, repeatable; default ``box``): ``box``, the published box and push, first pushes at
0.30, 0.35 and 0.40 m; ``flat``, a flat block (10 x 10 x 5 cm, 0.3 kg) pushed slowly (0.1 m/s) at its centre
line at 0.30, 0.33 and 0.36 m, which tells neither its support distribution (no turn) nor its table friction (no
slide after the pusher stops), with the design free to push off centre and faster (0.1-0.55 m/s).

``python -m benchmarks.design_truth --json [--seeds N] [--scenario box|flat]... [--workers W]`` (about 1.5 min
per seed and scenario on one core; progress on stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.cli import main as cli
from sim2real.cli.design_cmd import SPACE_OPTIONS
from sim2real.control import ExperimentConfig, PushConfig, load_experiment_config, save_experiment_config
from sim2real.params import ParameterSet, spec
from sim2real.sysid.design import Candidate, PushSpace
from sim2real.sysid.design.information import EvaluationTask, evaluate_candidate
from sim2real.sysid.design.space import DEFAULT_YAW_DEG
from sim2real.sysid.prediction import run_standard_trial
from sim2real.sysid.problem import ColumnMap
from sim2real.sysid.residuals import ResidualSpec
from sim2real.trials import write_trial
from sim2real.trials.records import PoseSeries

FREE = ("contact.mu_table", "contact.mu_pusher", "contact.support_ratio")
HIDDEN_RANGES = {"contact.mu_table": (0.35, 0.65), "contact.mu_pusher": (0.15, 0.45),
                 "contact.support_ratio": (0.5, 0.9)}
FRICTION_SPREAD, NOISE_M = 0.15, 3e-4


@dataclass(frozen=True)
class Scenario:
    """What is pushed and how: the box (parameters set for the truth and the fits alike), the push every standard
    trial makes, the first pushes, the standard sequence's next ones, and the design's options."""

    name: str
    box: dict[str, float]
    push: PushConfig
    initial: tuple[float, ...]
    standard_next: tuple[float, ...]
    design_options: tuple[str, ...] = ()

    @property
    def added(self) -> int:
        return len(self.standard_next)

    def set_options(self) -> list[str]:
        return [a for name, value in self.box.items() for a in ("--set", f"{name}={value}")]


SCENARIOS = {
    # the published box and push: three of the standard distances, then three more designed, standard or random
    "box": Scenario("box", {}, PushConfig(), (0.30, 0.35, 0.40), (0.45, 0.50, 0.30)),
    # a flat block (10 x 10 x 5 cm, 0.3 kg) pushed slowly at its centre line: the first pushes cannot tell the
    # support distribution (no turn) nor the table friction (no slide after the pusher stops); the design may
    # push off centre and faster (up to the standard push's speed)
    "flat": Scenario("flat", {"box.size_x": 0.10, "box.size_y": 0.10, "box.size_z": 0.05, "box.mass": 0.3},
                     PushConfig(height=0.035, speed=0.1, end_x=0.40, settle_time=1.0), (0.30, 0.33, 0.36),
                     (0.30, 0.33, 0.36), ("--speed", "0.1:0.55", "--height", "0.03:0.04")),
}


def _quiet(*argv: str) -> int:
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        return cli(list(argv))


def hidden_values(seed: int) -> dict[str, float]:
    """The seed's hidden values."""
    rng = np.random.default_rng(10_000 + seed)
    return {name: float(rng.uniform(*bounds)) for name, bounds in HIDDEN_RANGES.items()}


def write_pushes(run: Path, candidates: list[Candidate], hidden: dict[str, float], rng: np.random.Generator,
                 first_index: int = 0, box: dict[str, float] | None = None,
                 spread: float = FRICTION_SPREAD) -> list[float]:
    """Simulate ``candidates`` with the hidden values and each trial's own table friction (the hidden value times
    1 + U(-``spread``, ``spread``)); write them with noisy box poses. Returns each trial's table friction."""
    frictions = []
    for k, candidate in enumerate(candidates):
        mu = hidden["contact.mu_table"] * (1.0 + rng.uniform(-spread, spread))
        frictions.append(mu)
        params = ParameterSet.nominal().replace({**(box or {}), **hidden, "contact.mu_table": mu})
        trial = run_standard_trial(candidate.distance, params,
                                   experiment=ExperimentConfig(distances=(candidate.distance,), push=candidate.push))
        record = trial.record(index=first_index + k)
        poses = record.platforms["sim"].box_pose
        assert poses is not None
        noisy = PoseSeries(poses.t, poses.position + rng.normal(0.0, NOISE_M, poses.position.shape),
                           poses.quaternion)
        meta = {key: value for key, value in record.meta.items() if key != "params"}  # a user's recording
        write_trial(run, dataclasses.replace(
            record, platforms={"sim": dataclasses.replace(record.platforms["sim"], box_pose=noisy)}, meta=meta))
    return frictions


def fit(runs: list[Path], out: Path, scenario: Scenario) -> tuple[int, dict[str, Any]]:
    """``sim2real fit`` as a user runs it; its exit status and fit.json."""
    status = _quiet("fit", *map(str, runs), "--free", ",".join(FREE), "--horizon", "trial", "--mode", "kinematic",
                    "--max-iterations", "40", *scenario.set_options(), "--out", str(out))
    path = out.with_suffix(".json")
    return status, json.loads(path.read_text()) if path.is_file() else {}


def random_pushes(params_yaml: Path, seed: int, scenario: Scenario) -> list[Candidate]:
    """As many feasible pushes as the design adds that do not tip the box (10 deg) at the fitted values, drawn
    from the design's space."""
    from sim2real.params import load_params

    params = load_params(params_yaml)
    count = scenario.added
    space = PushSpace.default(scenario.push, params)
    options = dict(zip(scenario.design_options[::2], scenario.design_options[1::2], strict=True))
    dimension_of = {option: dimension for option, dimension, _ in SPACE_OPTIONS}
    ranges = {dimension_of[key]: tuple(float(v) for v in text.split(":")) for key, text in options.items()}
    pool = space.with_ranges(**ranges).candidates(4 * count + 8, params, seed=50_000 + seed)  # type: ignore[arg-type]
    spec = ResidualSpec(horizon=None, mode="kinematic")
    chosen = []
    for candidate in pool:
        info = evaluate_candidate(EvaluationTask(candidate, (params,), ColumnMap.of(FREE, None), spec, 10.0))[0]
        if info.feasible:
            chosen.append(candidate)
        if len(chosen) == count:
            break
    return chosen


def designed_pushes(fit_json: Path, out: Path, seed: int, scenario: Scenario, experiment: Path
                    ) -> tuple[list[Candidate], dict[str, Any], int]:
    """``sim2real design`` from the fit: the pushes, design.json and its exit status."""
    status = _quiet("design", "--fit", str(fit_json), "-n", str(scenario.added), "--no-topple", "--seed", str(seed),
                    "--experiment", str(experiment), *scenario.design_options, "--workers", "1", "--out", str(out))
    config = load_experiment_config(out)
    record = json.loads(out.with_suffix(".json").read_text())
    return [Candidate(d, config.push_of(k)) for k, d in enumerate(config.distances)], record, status


def _strategy_figures(status: int, document: dict[str, Any], hidden: dict[str, float]) -> dict[str, Any]:
    """A fit's figures: each parameter's 95 % interval width (the whole bound range when the fit gives it no
    interval: it is not determined), whether it holds the hidden value, the exit status and problems."""
    ci95 = document.get("ci95") or {}
    out: dict[str, Any] = {"status": status, "problems": document.get("problems", []), "width": {}, "holds": {}}
    for name in FREE:
        interval = ci95.get(name)
        out["width"][name] = spec(name).upper - spec(name).lower if interval is None else float(interval[1] -
                                                                                                 interval[0])
        out["holds"][name] = None if interval is None else bool(interval[0] <= hidden[name] <= interval[1])
    return out


def one_seed(job: tuple[str, int, float, str | None]) -> dict[str, Any]:
    """Every strategy on one seed of one scenario, with that per-trial friction spread and the box's yaw range
    (``--box-yaw`` of the design and of the random pushes; None: the design's default)."""
    scenario_name, seed, spread, box_yaw = job
    scenario = SCENARIOS[scenario_name]
    if box_yaw is not None:
        scenario = dataclasses.replace(scenario, design_options=(*scenario.design_options, "--box-yaw", box_yaw))
    rng = np.random.default_rng(seed)
    hidden = hidden_values(seed)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        experiment = root / "experiment.yaml"
        save_experiment_config(experiment, ExperimentConfig(scenario.initial, scenario.push))
        frictions = write_pushes(root / "init", [Candidate(d, scenario.push) for d in scenario.initial], hidden,
                                 rng, box=scenario.box, spread=spread)
        init_status, init = fit([root / "init"], root / "init.yaml", scenario)
        result: dict[str, Any] = {"scenario": scenario.name, "seed": seed, "hidden": hidden,
                                  "init": _strategy_figures(init_status, init, hidden)}
        if not init:
            result["error"] = "the initial fit wrote no fit.json"
            return result
        designed, record, design_status = designed_pushes(root / "init.json", root / "designed.yaml", seed, scenario,
                                                          experiment)
        strategies = {"designed": designed,
                      "standard": [Candidate(d, scenario.push) for d in scenario.standard_next],
                      "random": random_pushes(root / "init.yaml", seed, scenario)}
        result["design_status"] = design_status
        for name, pushes in strategies.items():
            extra_rng = np.random.default_rng([seed, len(name)])
            more = write_pushes(root / name, pushes, hidden, extra_rng, first_index=len(scenario.initial),
                                box=scenario.box, spread=spread)
            truth = {**hidden, "contact.mu_table": float(np.mean(frictions + more))}
            status, document = fit([root / "init", root / name], root / f"fit_{name}.yaml", scenario)
            figures = _strategy_figures(status, document, truth)
            figures["undetermined"] = [n for n in FREE if n in document.get("undetermined", []) or any(
                p.startswith(f"{n} is undetermined") or ("not determined" in p and n in p)
                for p in document.get("problems", []))]
            figures["pushes"] = [c.as_dict() for c in pushes]
            result[name] = figures
        result["designed"]["forecast_width"] = {n: record["after"][-1][n]["width"] for n in FREE}
        # the design's own forecast of random sets from its feasible candidates against the designed set
        result["designed"]["forecast_random_ratio"] = (record.get("random") or {}).get("width_ratio")
    result["wall_s"] = time.perf_counter() - started
    return result


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summary(seeds: list[dict[str, Any]]) -> dict[str, Any]:
    """Width ratios and coverage over the seeds."""
    ratios: dict[str, list[float]] = {"standard": [], "random": []}
    coverage: dict[str, list[int]] = {"designed": [0, 0], "standard": [0, 0], "random": [0, 0]}
    for seed in seeds:
        if "designed" not in seed:
            continue
        for other in ratios:
            per_param = [seed[other]["width"][n] / seed["designed"]["width"][n] for n in FREE
                         if seed[other]["width"][n] and seed["designed"]["width"][n]]
            if per_param:
                ratios[other].append(statistics.median(per_param))
        for name, counts in coverage.items():
            holds = [h for h in seed[name]["holds"].values() if h is not None]
            counts[0] += sum(holds)
            counts[1] += len(holds)
    determined = {k: sum(1 for s in seeds if k in s and not s[k].get("undetermined")) for k in coverage}
    achieved_over_forecast = [s["designed"]["width"][n] / s["designed"]["forecast_width"][n] for s in seeds
                              if "designed" in s for n in FREE if s["designed"]["forecast_width"][n] > 0]
    forecast_random = [s["designed"]["forecast_random_ratio"]["median"] for s in seeds
                       if (s.get("designed") or {}).get("forecast_random_ratio")]
    return {"seeds": len(seeds), "all_determined": determined,
            "forecast_random_over_designed": {"median": _median(forecast_random),
                                              "quartiles": [float(np.percentile(forecast_random, q)) for q in (25, 75)]
                                              if forecast_random else None},
            "achieved_over_forecast": {"median": _median(achieved_over_forecast),
                                       "quartiles": [float(np.percentile(achieved_over_forecast, q)) for q in (25, 75)]
                                       if achieved_over_forecast else None},
            "initial_undetermined": sum(1 for s in seeds if s.get("init", {}).get("status") == 3),
            "width_ratio_median": {k: _median(v) for k, v in ratios.items()},
            "coverage": {k: {"holds": c[0], "of": c[1]} for k, c in coverage.items()},
            "exit_0": {k: sum(1 for s in seeds if s.get(k, {}).get("status") == 0) for k in coverage}}


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), action="append",
                        help="box (default) and/or flat (repeatable)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--friction-spread", type=float, default=FRICTION_SPREAD,
                        help="each trial's table friction is the hidden value times 1 + U(-S, S) (default "
                             f"{FRICTION_SPREAD}; 0: no model error, the fitted model contains the truth)")
    parser.add_argument("--box-yaw", metavar="LOW:HIGH",
                        help="the design's and the random pushes' range of the box's yaw at the start, deg (default "
                             f"the design's, {-DEFAULT_YAW_DEG:g}:{DEFAULT_YAW_DEG:g}; 0: square to the push, the "
                             "space before the yaw was in it)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    results = []
    scenarios = args.scenario or ["box"]
    if not 0.0 <= args.friction_spread < 1.0:
        parser.error("--friction-spread must be in [0, 1)")
    jobs = [(name, seed, args.friction_spread, args.box_yaw) for name in scenarios for seed in range(args.seeds)]
    yaw_range = ([float(v) for v in args.box_yaw.split(":")] if args.box_yaw is not None
                 else [-DEFAULT_YAW_DEG, DEFAULT_YAW_DEG])
    with ProcessPoolExecutor(args.workers) as pool:
        for result in pool.map(one_seed, jobs):
            print(f"design_truth: {result['scenario']} seed {result['seed']} done in {result.get('wall_s', 0):.0f} s",
                  file=sys.stderr, flush=True)
            results.append(result)
    record = {"benchmark": "design_truth", "friction_spread": args.friction_spread,
              "box_yaw_range_deg": [yaw_range[0], yaw_range[-1]],
              "summary": {name: summary([r for r in results if r["scenario"] == name]) for name in scenarios},
              "per_seed": results, "wall_s": time.perf_counter() - started}
    print(json.dumps(record, indent=1 if not args.json else None))


if __name__ == "__main__":
    run()
