"""Known truth for a flat block pushed near its centre line (issue 29): does the fit find the uneven support?

Per seed: the pushes of ``tests/fixtures/flat_blocks.py`` (a 99 x 99 x 9.5 mm steel-like block, a
3.1 mm probe; six training pushes, three of them at 0.42-0.5 rad to the face normal so the probe
slides; four near-central held-out pushes; 0.3 mm / 0.3° motion-capture noise per sample) are
simulated with the hidden ``contact.mu_table`` 0.25, ``contact.mu_pusher`` 0.35,
``contact.support_ratio`` 0.7 and ``box.com_y`` 4 mm, then fitted as a user would, from the nominal
start with the object stored in the trials::

    sim2real fit TRAIN --free contact.mu_table,contact.mu_pusher,contact.support_ratio,box.com_y \\
        --horizon trial --max-iterations 40 --validate HELD --out block.yaml
    sim2real replay HELD --spread block.json --draws 30 --start-noise 0.3,0.3 --out spread

Reported per seed: the fit's exit status and problems, the fitted values, the held-out mean final
position and yaw errors at the nominal and the fitted values, the spread's inside count and the wall
times; and over all seeds: fits that exit 0, fits within 5 % of every hidden value (com_y within
0.2 mm), the median ratios of the held-out errors (fitted / nominal) and the share of held-out
outcomes inside their 95 % spread.

``python -m benchmarks.flat_block_truth --json [--seeds N] [--workers W]`` (about 15 s per seed on
one idle core).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fixtures import flat_blocks

from sim2real.cli import main as cli


def _quiet(*argv: str) -> int:
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        return cli(list(argv))


def one_seed(seed: int) -> dict[str, Any]:
    """Fit and spread of one seed (see the module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        train, held = flat_blocks.write_seed(root, seed)
        out = root / "block.yaml"
        clock = time.perf_counter()
        code = _quiet("fit", str(train), "--free", flat_blocks.FREE, "--horizon", "trial", "--max-iterations", "40",
                      "--validate", str(held), "--out", str(out))
        fit_s = time.perf_counter() - clock
        report = json.loads(out.with_suffix(".json").read_text())
        clock = time.perf_counter()
        replay = _quiet("replay", str(held), "--spread", str(out.with_suffix(".json")), "--draws", "30",
                        "--start-noise", "0.3,0.3", "--seed", str(seed), "--out", str(root / "spread"))
        spread_s = time.perf_counter() - clock
        spread = json.loads((root / "spread" / "spread.json").read_text()) if replay == 0 else {}
    validation = report["validation"]["prediction"]["validation"]
    values = {name: report["values"][name] for name in flat_blocks.TRUTH}
    within = all(abs(values[n] - t) <= (2e-4 if n == "box.com_y" else 0.05 * t) for n, t in flat_blocks.TRUTH.items())
    return {"seed": seed, "exit": code, "problems": report["problems"], "values": values, "within_5pct": within,
            "held_out": {"nominal": {k: validation["start"][k] for k in ("final_position_m", "yaw_deg")},
                         "fitted": {k: validation["final"][k] for k in ("final_position_m", "yaw_deg")}},
            "spread": {"exit": replay, "inside": spread.get("inside"), "judged": spread.get("judged"),
                       "uniform": spread.get("uniform")},
            "fit_s": round(fit_s, 2), "spread_s": round(spread_s, 2)}


def summary(seeds: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over the seeds."""
    ratios = {k: statistics.median(s["held_out"]["fitted"][k] / s["held_out"]["nominal"][k] for s in seeds)
              for k in ("final_position_m", "yaw_deg")}
    inside = sum(s["spread"]["inside"] or 0 for s in seeds)
    judged = sum(s["spread"]["judged"] or 0 for s in seeds)
    return {"seeds": len(seeds), "fits_exit_0": sum(s["exit"] == 0 for s in seeds),
            "fits_within_5pct": sum(s["within_5pct"] for s in seeds),
            "median_held_out_ratio_fitted_over_nominal": ratios,
            "spread_inside": inside, "spread_judged": judged,
            "spread_inside_share": inside / judged if judged else None,
            "median_fit_s": statistics.median(s["fit_s"] for s in seeds)}


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output)")
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 (default 10)")
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    args = parser.parse_args()
    with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
        seeds = list(pool.map(one_seed, range(args.seeds)))
    for entry in seeds:
        print(f"seed {entry['seed']}: {json.dumps(entry)}", file=sys.stderr, flush=True)
    print(json.dumps({"benchmark": "flat_block_truth", "truth": flat_blocks.TRUTH, "summary": summary(seeds),
                      "per_seed": seeds}, indent=2))


if __name__ == "__main__":
    run()
