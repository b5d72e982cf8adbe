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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def _phase(ticks: np.ndarray) -> np.ndarray:
    """``|phase|`` (s) of each tick (s, increasing) against the best 100 Hz grid through them."""
    phase = ticks - ticks[0] - np.round((ticks - ticks[0]) / PERIOD) * PERIOD
    return np.abs(phase - np.median(phase))


def loop_figures(ticks: np.ndarray, commanded: int) -> dict[str, float]:
    """Rate and jitter of one trial's loop ticks (s, increasing) with ``commanded`` PD commands."""
    periods = np.abs(np.diff(ticks) - PERIOD)
    return {"rate_hz": float((len(ticks) - 1) / (ticks[-1] - ticks[0])),
            "period_jitter_p50_ms": float(np.percentile(periods, 50) * 1e3),
            "period_jitter_p99_ms": float(np.percentile(periods, 99) * 1e3),
            "period_jitter_max_ms": float(np.max(periods) * 1e3),
            "phase_jitter_p99_ms": float(np.percentile(_phase(ticks), 99) * 1e3),
            "ticks": len(ticks), "commanded_share": float(commanded / len(ticks)),
            "duration_s": float(ticks[-1] - ticks[0])}


@dataclass(frozen=True)
class LoopRun:
    """One stand-in run: per trial its figures (:func:`loop_figures`, with its name) and tick stamps (s), the
    PD commands and watchdog gaps (trial.json ``loop_health``) over its trials, and its wall time (s)."""

    trials: list[dict[str, Any]]
    stamps: list[np.ndarray]
    commanded: int
    watchdog_gaps: int
    wall_s: float


def run(out: Path) -> LoopRun:
    """One stand-in run into ``out``; the figures of its trials."""
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
    records = read_run(out)
    reals = [record.platforms["real"] for record in records]
    stamps = [real.joint_states.t for real in reals]
    trials = [{"trial": record.name, **loop_figures(ticks, len(real.joint_command))}
              for record, real, ticks in zip(records, reals, stamps, strict=True)]
    gaps = sum(int((record.meta.get("loop_health") or {}).get("real", {}).get("watchdog_gaps", 0))
               for record in records)
    return LoopRun(trials, stamps, sum(len(real.joint_command) for real in reals), gaps, wall)


def summary(runs: list[LoopRun]) -> dict[str, object]:
    """The figures over every trial of ``runs``."""
    trials = [t for r in runs for t in r.trials]
    stamps = [ticks for r in runs for ticks in r.stamps]
    periods = np.concatenate([np.abs(np.diff(ticks) - PERIOD) for ticks in stamps])
    phases = np.concatenate([_phase(ticks) for ticks in stamps])
    return {
        "runs": len(runs),
        "rate_hz": float(sum(len(ticks) - 1 for ticks in stamps) / sum(t["duration_s"] for t in trials)),
        "slowest_trial_rate_hz": float(min(t["rate_hz"] for t in trials)),
        "jitter_p99_ms": float(np.percentile(periods, 99) * 1e3),
        "jitter_p50_ms": float(np.percentile(periods, 50) * 1e3),
        "jitter_max_ms": float(np.max(periods) * 1e3),
        "phase_jitter_p99_ms": float(np.percentile(phases, 99) * 1e3),
        "commanded_share": float(sum(r.commanded for r in runs) / sum(len(ticks) for ticks in stamps)),
        "watchdog_gaps": sum(r.watchdog_gaps for r in runs),
        "run_wall_s": [r.wall_s for r in runs],
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
