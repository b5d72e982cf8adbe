"""Stored benchmark outputs: ``docs/benchmarks/<benchmark>.json`` (a run's output with its command, commit,
date and machine load), how a run is stored, and the provenance line under a table."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


DOCS = ROOT / "docs"


STORE = DOCS / "benchmarks"


def load(benchmark: str) -> dict[str, Any] | None:
    """The stored record of ``benchmark`` (``{"command", "commit", "date", ..., "output"}``), or None."""
    path = STORE / f"{benchmark}.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_benchmark(benchmark: str, extra: Sequence[str], stored_as: str | None = None) -> Path:
    """Run ``python -m benchmarks.<benchmark> --json [extra]`` and store its output with the run's provenance.

    ``stored_as`` names the stored record when it is not the benchmark's own (a second run of one benchmark with
    other arguments, e.g. ``design_truth_exact``).

    Returns
    -------
    Path
        ``docs/benchmarks/<stored_as or benchmark>.json``.

    Raises
    ------
    SystemExit
        When the benchmark fails or prints no JSON object.
    """
    command = [sys.executable, "-m", f"benchmarks.{benchmark}", "--json", *extra]
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"benchmarks.{benchmark} exited with status {done.returncode}")
    try:
        output = json.loads(done.stdout)  # one object, possibly indented over many lines
    except json.JSONDecodeError:
        lines = [line for line in done.stdout.splitlines() if line.strip().startswith("{")]
        if not lines:
            raise SystemExit(f"benchmarks.{benchmark} printed no JSON object") from None
        output = json.loads(lines[-1])
    dirty = bool(git("status", "--porcelain", "--untracked-files=no", "sim2real"))
    record = {
        "command": f"python -m benchmarks.{benchmark} --json" + "".join(f" {a}" for a in extra),
        "commit": git("rev-parse", "--short", "HEAD") + (" (sim2real/ modified)" if dirty else ""),
        "date": dt.date.today().isoformat(),
        "cpus": os.cpu_count(),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "wall_s": round(wall, 1),
        "output": output,
    }
    STORE.mkdir(parents=True, exist_ok=True)
    path = STORE / f"{stored_as or benchmark}.json"
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def provenance(*benchmarks: str) -> str:
    """One line under a table: which command, commit, date and load gave its figures."""
    parts = []
    for name in benchmarks:
        record = load(name)
        if record is None:
            continue
        note = f" ({record['note']})" if record.get("note") else ""
        parts.append(f"`{record['command']}`: {record['date']}, commit {record['commit']}, {record['cpus']} CPUs, "
                     f"load average {record['load_before']:.1f} before and {record['load_after']:.1f} after the run, "
                     f"{record['wall_s']:.0f} s{note}")
    return ("*Measured by " + "; ".join(parts) + ".*") if parts else ""
