"""Benchmark: time to design 6 pushes for 5 parameters over the default push space (issue 59; target under 60 s
on 2 cores).

``python -m benchmarks.design_speed --json`` runs, ``--repeat`` times (default 3), what a user runs before the
first push::

    sim2real design --free contact.mu_table,contact.mu_pusher,contact.support_ratio,box.com_y,box.com_z \\
        -n 6 --workers 2 --out designed.yaml

(120 candidates, 4 linearisation points, the default criterion) and prints one JSON object: the median and each
run's wall seconds, the stage the time goes to (candidates evaluated per second), the exit status, and the
machine's CPU count.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

FREE = "contact.mu_table,contact.mu_pusher,contact.support_ratio,box.com_y,box.com_z"


def one_run(workers: int, candidates: int, points: int) -> dict[str, object]:
    """One design; its wall time and exit status."""
    from sim2real.cli import main as cli

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            status = cli(["design", "--free", FREE, "-n", "6", "--workers", str(workers), "--candidates",
                          str(candidates), "--points", str(points), "--out", str(Path(tmp) / "designed.yaml")])
        wall = time.perf_counter() - started
        record = json.loads((Path(tmp) / "designed.json").read_text())
    return {"wall_s": wall, "status": status, "feasible": record["candidates"]["feasible"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--candidates", type=int, default=120)
    parser.add_argument("--points", type=int, default=4)
    args = parser.parse_args()
    runs = [one_run(args.workers, args.candidates, args.points) for _ in range(args.repeat)]
    walls = [float(r["wall_s"]) for r in runs]  # type: ignore[arg-type]
    median = statistics.median(walls)
    record = {"benchmark": "design_speed", "parameters": 5, "pushes": 6, "candidates": args.candidates,
              "points": args.points, "workers": args.workers, "cpus": os.cpu_count(), "median_s": median,
              "runs": runs, "simulations_per_s": args.candidates * args.points / median, "target_s": 60.0}
    print(json.dumps(record) if args.json else f"design of 6 pushes for 5 parameters: median {median:.1f} s "
          f"over {len(runs)} runs (target 60 s)")


if __name__ == "__main__":
    main()
