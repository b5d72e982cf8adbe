"""Benchmark of scaling out: the cube-toss fit and a sweep of standard pushes on each executor.

``python -m benchmarks.scale --json`` imports the ContactNets tosses (shipped in ``sim2real/data/cube_toss``) and
runs the README's cube-toss fit (``contact.mu_table``, the tied cube side, ``box.edge_radius``;
40-step segments) on all of them (``--tosses N`` for the first N), once per executor
configuration of ``--configs`` (default ``local:1,local:2,ray:2``: local processes with one and
two workers, a local Ray runtime of two CPUs). Every configuration runs the same iterations and
must reach the same values, which the JSON checks. Then it runs a sweep of standard pushes
(``--sweep-points`` values of ``contact.mu_table`` at two distances) on each configuration.

Ray runs in a child process inside a network namespace of its own (``tests/netns.py``): Ray
probes cloud-metadata and public DNS addresses at start-up, and nothing here leaves loopback.
Where no namespace can be made the Ray configurations are skipped with the reason.

JSON: per configuration the time to start the executor, run one trivial task per worker and
stop it (``startup_s``; a local Ray runtime takes seconds); the fit wall time (s, including
starting the workers), iterations, final cost and values, and the speed-up and efficiency
against ``local:1`` (speed-up / workers); the sweep's trials per second and per second per
worker. One run; wall times are single measurements on this machine, not medians.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from benchmarks import cube_toss
from sim2real.cli import main as cli_main
from sim2real.data import cube_toss_npz
from sim2real.execution import open_executor
from sim2real.params import ParameterSet
from sim2real.sysid import FitProblem, LMSettings, ResidualSpec, Weights, fit_trials
from sim2real.trials import read_trial
from sim2real.trials.cube_toss import import_cube_tosses, load_cube_tosses

ROOT = Path(__file__).resolve().parents[1]
NPZ = cube_toss_npz()
NETNS = ROOT / "tests" / "netns.py"
#: The README's cube-toss fit (benchmarks.cube_toss).
FREE, START, WEIGHTS, HORIZON = cube_toss.FREE, cube_toss.START, cube_toss.WEIGHTS, cube_toss.HORIZON


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _noop(value: int) -> int:
    return value


def fit_tosses(tosses: int, iterations: int, executor: str, workers: int) -> dict[str, Any]:
    """The README's cube-toss fit on the first ``tosses`` tosses (0: all) on one executor."""
    total = len(load_cube_tosses(NPZ).offsets) - 1
    count = total if tosses <= 0 else min(tosses, total)
    with tempfile.TemporaryDirectory() as tmp:
        import_cube_tosses(NPZ, Path(tmp) / "tosses", f"0-{count - 1}")
        records = [read_trial(d) for d in sorted((Path(tmp) / "tosses").glob("toss_*"))]
    start = ParameterSet.nominal().replace(START)
    clock = time.perf_counter()
    result = fit_trials(FitProblem(records, start, FREE,
                                   spec=ResidualSpec(horizon=HORIZON, weights=Weights.parse(WEIGHTS))),
                        settings=LMSettings(max_iterations=iterations), executor=executor, workers=workers)
    wall = time.perf_counter() - clock
    return {"tosses": len(records), "wall_s": wall, "iterations": result.trace[-1]["iteration"],
            "cost": result.trace[-1]["cost"], "status": result.status, "stop_reason": result.stop_reason,
            "values": result.values}


def sweep(points: int, executor: str, workers: int) -> dict[str, Any]:
    """A sweep of ``points`` values of contact.mu_table at two distances on one executor."""
    with tempfile.TemporaryDirectory() as tmp:
        args = ["sweep", "--distances", "0.30,0.40", "--set-grid", f"contact.mu_table=0.3:0.7:{points}",
                "--out", str(Path(tmp) / "sweep"), "--executor", executor, "--workers", str(workers)]
        clock = time.perf_counter()
        with contextlib.redirect_stdout(sys.stderr):  # stdout carries the JSON only
            code = cli_main(args)
        wall = time.perf_counter() - clock
        rows = (Path(tmp) / "sweep" / "outcomes.csv").read_text(encoding="utf-8").splitlines()[1:]
    return {"exit": code, "trials": len(rows), "wall_s": wall, "trials_per_s": len(rows) / wall,
            "trials_per_s_per_worker": len(rows) / wall / workers}


def run_config(spec: str, args: argparse.Namespace) -> dict[str, Any]:
    """Fit and sweep on ``spec`` = ``EXECUTOR:WORKERS`` in this process."""
    executor, _, workers_text = spec.rpartition(":")
    workers = int(workers_text)
    clock = time.perf_counter()
    with open_executor(executor, workers) as runner:  # the fixed cost: start, warm the workers, stop
        list(runner.map(_noop, range(2 * workers)))
    startup = time.perf_counter() - clock
    _log(f"{spec}: fitting {args.tosses or 'all'} tosses, {args.iterations} iteration(s)")
    fit = fit_tosses(args.tosses, args.iterations, executor, workers)
    _log(f"{spec}: fit {fit['wall_s']:.1f} s; sweeping {2 * args.sweep_points} standard pushes")
    return {"config": spec, "executor": executor, "workers": workers, "startup_s": startup, "fit": fit,
            "sweep": sweep(args.sweep_points, executor, workers)}


def run_isolated(spec: str, args: argparse.Namespace) -> dict[str, Any]:
    """``run_config`` in a child inside a network namespace (for Ray)."""
    command = [sys.executable, str(NETNS), sys.executable, "-m", "benchmarks.scale", "--only", spec,
               "--tosses", str(args.tosses), "--iterations", str(args.iterations),
               "--sweep-points", str(args.sweep_points)]
    with tempfile.TemporaryDirectory(prefix="ray", dir="/tmp") as ray_tmp:
        env = {**os.environ, "RAY_TMPDIR": ray_tmp}
        done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        return {"config": spec, "skipped": f"child exited {done.returncode} (see stderr)"}
    return json.loads(done.stdout)


def _isolation_problem() -> str | None:
    sys.path.insert(0, str(NETNS.parent))
    import netns

    return netns.isolation_problem()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output)")
    parser.add_argument("--tosses", type=int, default=0, help="fit the first N tosses (default 0: all 570)")
    parser.add_argument("--iterations", type=int, default=5,
                        help="iteration limit of each fit (default 5: the same work on every executor)")
    parser.add_argument("--sweep-points", type=int, default=100,
                        help="mu_table values of the sweep, each at 2 distances (default 100)")
    parser.add_argument("--configs", default="local:1,local:2,ray:2",
                        help="EXECUTOR:WORKERS list (default local:1,local:2,ray:2)")
    parser.add_argument("--only", help=argparse.SUPPRESS)  # one configuration, in this process (the Ray child)
    args = parser.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)
    if args.only:
        print(json.dumps(run_config(args.only, args)))
        return
    problem = None
    results = []
    for spec in args.configs.split(","):
        if spec.startswith("ray"):
            problem = problem or _isolation_problem()
            results.append({"config": spec, "skipped": problem} if problem else run_isolated(spec, args))
        else:
            results.append(run_config(spec, args))
        entry = results[-1]
        if "fit" in entry:
            _log(f"{spec}: fit {entry['fit']['wall_s']:.1f} s, sweep {entry['sweep']['trials_per_s']:.2f} trials/s")
    base = next((r for r in results if r.get("config") == "local:1" and "fit" in r), None)
    for entry in results:
        if base is not None and "fit" in entry:
            speedup = base["fit"]["wall_s"] / entry["fit"]["wall_s"]
            entry["fit"]["speedup_vs_local_1"] = speedup
            entry["fit"]["efficiency_per_worker"] = speedup / entry["workers"]
            entry["fit"]["same_values_as_local_1"] = entry["fit"]["values"] == base["fit"]["values"]
            entry["sweep"]["speedup_vs_local_1"] = entry["sweep"]["trials_per_s"] / base["sweep"]["trials_per_s"]
    print(json.dumps({"benchmark": "scale", "horizon": HORIZON, "free": FREE, "weights": WEIGHTS,
                      "iterations_limit": args.iterations, "configs": results}, indent=2))


if __name__ == "__main__":
    main()
