"""Benchmark: the real platform's PD loop in stand-in runs (emulated xArm through the SDK), idle and loaded.

Runs ``sim2real run --mode standin`` (through :func:`sim2real.nodes.runner.run_experiment`)
for two short trials, ``--runs`` times on the idle machine and ``--runs`` times beside ``--load``
CPU-bound processes (busy loops on every CPU, as ``benchmarks.faults``' loaded column), and reads
the bags back. The loop tick is the ``real/joint_states`` stamp (the driver's state read); its PD
command carries the same stamp. Prints one JSON object with an ``idle`` and a ``loaded`` part,
each over its runs: achieved loop rate (Hz), period jitter p50/p99/max (ms, ``|Δt − 10 ms|``
between consecutive ticks), phase jitter p99 (ms, each tick against the best 100 Hz grid), the
share of ticks that got a PD command, the watchdog gaps (commands further apart than the
driver's watchdog, trial.json ``loop_health``), the runs' wall times and the per-trial figures.
Targets: idle 100 Hz (≥ 99) with period jitter p99 ≤ 2 ms; loaded ≥ 95 Hz with no watchdog gap.

Run: ``python -m benchmarks.loop --json [--runs 2] [--load 4]`` (DDS on loopback; ``ROS_DOMAIN_ID``
from the environment; about 15 s per run idle, 20 s loaded).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

EXPERIMENT = """\
experiment:
  ros__parameters:
    distances: [0.30, 0.45]
    start_tolerance: 0.01
    push: {height: 0.15, lateral: 0.0, start_x: 0.20, end_x: 0.42, speed: 0.2, ramp_time: 0.2,
           pre_time: 0.1, settle_time: 1.0, rate_hz: 100.0}
"""
HOST = "127.0.0.71"
PERIOD = 0.01


def loop_figures(ticks: np.ndarray, commanded: int) -> dict[str, float]:
    """Rate and jitter of one trial's loop ticks (s, increasing) with ``commanded`` PD commands."""
    periods = np.diff(ticks)
    phase = ticks - ticks[0] - np.round((ticks - ticks[0]) / PERIOD) * PERIOD
    phase -= np.median(phase)
    return {"rate_hz": float((len(ticks) - 1) / (ticks[-1] - ticks[0])),
            "period_jitter_p50_ms": float(np.percentile(np.abs(periods - PERIOD), 50) * 1e3),
            "period_jitter_p99_ms": float(np.percentile(np.abs(periods - PERIOD), 99) * 1e3),
            "period_jitter_max_ms": float(np.max(np.abs(periods - PERIOD)) * 1e3),
            "phase_jitter_p99_ms": float(np.percentile(np.abs(phase), 99) * 1e3),
            "ticks": len(ticks), "commanded_share": float(commanded / len(ticks))}


def run(out: Path) -> dict[str, object]:
    """One stand-in run into ``out``; the figures over all its trials."""
    from sim2real.nodes.runner import run_experiment
    from sim2real.params import load_params
    from sim2real.paths import config_file
    from sim2real.trials import read_run

    out.parent.mkdir(parents=True, exist_ok=True)
    experiment = out.parent / "experiment.yaml"
    experiment.write_text(EXPERIMENT)
    started = time.monotonic()
    run_experiment("standin", None, load_params(config_file("params.yaml")), out, experiment_file=experiment,
                   standin_host=HOST, progress=lambda line: print(line, file=sys.stderr), timeout=300)
    wall = time.monotonic() - started
    trials, ticks, periods, phases, commanded, gaps = [], [], [], [], 0, 0
    for record in read_run(out):
        real = record.platforms["real"]
        gaps += int((record.meta.get("loop_health") or {}).get("real", {}).get("watchdog_gaps", 0))
        stamps = real.joint_states.t
        figures = loop_figures(stamps, len(real.joint_command))
        trials.append({"trial": record.name, **figures})
        periods.append(np.abs(np.diff(stamps) - PERIOD))
        phase = stamps - stamps[0] - np.round((stamps - stamps[0]) / PERIOD) * PERIOD
        phases.append(np.abs(phase - np.median(phase)))
        ticks.append(len(stamps))
        commanded += len(real.joint_command)
        duration = stamps[-1] - stamps[0]
        trials[-1]["duration_s"] = float(duration)
    return {"trials": trials, "ticks": ticks, "periods": periods, "phases": phases, "commanded": commanded,
            "watchdog_gaps": gaps, "wall_s": wall}


def summary(runs: list[dict[str, object]]) -> dict[str, object]:
    """The figures over every trial of ``runs`` (each what :func:`run` returned)."""
    trials = [t for r in runs for t in r["trials"]]  # type: ignore[attr-defined]
    ticks = [n for r in runs for n in r["ticks"]]  # type: ignore[attr-defined]
    all_periods = np.concatenate([p for r in runs for p in r["periods"]])  # type: ignore[attr-defined]
    all_phases = np.concatenate([p for r in runs for p in r["phases"]])  # type: ignore[attr-defined]
    total_time = sum(t["duration_s"] for t in trials)
    return {
        "runs": len(runs),
        "rate_hz": float(sum(n - 1 for n in ticks) / total_time),
        "slowest_trial_rate_hz": float(min(t["rate_hz"] for t in trials)),
        "jitter_p99_ms": float(np.percentile(all_periods, 99) * 1e3),
        "jitter_p50_ms": float(np.percentile(all_periods, 50) * 1e3),
        "jitter_max_ms": float(np.max(all_periods) * 1e3),
        "phase_jitter_p99_ms": float(np.percentile(all_phases, 99) * 1e3),
        "commanded_share": float(sum(int(r["commanded"]) for r in runs) / sum(ticks)),  # type: ignore[call-overload]
        "watchdog_gaps": int(sum(int(r["watchdog_gaps"]) for r in runs)),  # type: ignore[call-overload]
        "run_wall_s": [float(r["wall_s"]) for r in runs],  # type: ignore[arg-type]
        "trials": trials,
    }


def main(argv: list[str] | None = None) -> int:
    from benchmarks.faults import cpu_load

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--runs", type=int, default=2, help="stand-in runs idle and again loaded (default 2)")
    parser.add_argument("--load", type=int, default=4, help="busy processes beside the loaded runs (default 4; 0: "
                        "idle runs only)")
    args = parser.parse_args(argv)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    figures: dict[str, object] = {"target_rate_hz": 1.0 / PERIOD, "load_processes": args.load}
    with tempfile.TemporaryDirectory(prefix="sim2real-bench-loop-") as tmp:
        os.environ.setdefault("ROS_LOG_DIR", str(Path(tmp) / "roslog"))
        figures["idle"] = summary([run(Path(tmp) / f"idle{k}" / "run") for k in range(args.runs)])
        if args.load > 0:
            with cpu_load(args.load, set(os.sched_getaffinity(0))):
                figures["loaded"] = summary([run(Path(tmp) / f"loaded{k}" / "run") for k in range(args.runs)])
    if args.json:
        print(json.dumps(figures))
    else:
        for part in ("idle", "loaded"):
            for key, value in (figures.get(part) or {}).items():  # type: ignore[union-attr]
                if key != "trials":
                    text = f"{value:.3f}" if isinstance(value, float) else str(value)
                    print(f"{part:7s}{key:22s} {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
