"""Model mismatch between the engines: pushes made by one engine, fitted by both, held-out error of each.

Known truth: the planar pushes of ``tests/fixtures/planar_pushes.py`` (a rod pushing a 9.5 mm plate; six
training and three held-out pushes, mocap noise 0.3 mm / 0.3°), made once by our engine (μ_table 0.25,
μ_pusher 0.45, support ratio 0.6) and once by MuJoCo (μ_table 0.25, μ_pusher 0.45, contact with a smooth
onset: impedance 0.01 over 2 mm). Each set is fitted by both engines from the nominal values
(:func:`sim2real.sysid.prediction.compare.compare_engines`, whole trials, the rod played back): ours frees both
frictions and the support ratio, MuJoCo both frictions. A fit by the engine that made the data shows
what the fit can do; a fit by the other engine shows model mismatch, the figure a lab wants.

``python -m benchmarks.crossfit --json``: per data set and engine, the held-out final position error
(m), yaw error (deg), trajectory RMS (m) at the start and fitted values, the fitted values, status
and fit wall time.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fixtures import planar_pushes as pushes

from sim2real.sysid import LMSettings, ResidualSpec
from sim2real.sysid.prediction import compare_engines
from sim2real.trials import read_trial

SMOOTH = {"mujoco.impedance_min": 0.01, "mujoco.impedance_width": 0.002}
TRUTH = {"ours": {"contact.mu_table": 0.25, "contact.mu_pusher": 0.45, "contact.support_ratio": 0.6},
         "mujoco": {"contact.mu_table": 0.25, "contact.mu_pusher": 0.45}}
FREE = {"ours": "contact.mu_table,contact.mu_pusher,contact.support_ratio",
        "mujoco": "contact.mu_table,contact.mu_pusher"}


def run(iterations: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="crossfit_"))
    out: dict[str, Any] = {}
    for maker in ("ours", "mujoco"):
        truth = pushes.params({**TRUTH[maker], **SMOOTH})
        train = pushes.write_pushes(root / maker / "train", pushes.TRAINING, truth, 3e-4, 5e-3, 0, engine=maker)
        held = pushes.write_pushes(root / maker / "held", pushes.HELD_OUT, truth, 3e-4, 5e-3, 100, engine=maker)
        records = [read_trial(train / f"push_{i:02d}") for i in range(len(pushes.TRAINING))]
        held_out = [read_trial(held / f"push_{i:02d}") for i in range(len(pushes.HELD_OUT))]
        start = pushes.params(SMOOTH)
        fits = compare_engines(records, held_out, {"ours": start, "mujoco": start}, FREE,
                               ResidualSpec(horizon=None, pusher_shape="rod"), LMSettings(max_iterations=iterations))
        out[f"made_by_{maker}"] = {"truth": TRUTH[maker], "fits": [fit.row() for fit in fits]}
        for fit in fits:
            after = fit.held_out("final")
            position, yaw = after.get("final_position_m", float("nan")), after.get("yaw_deg", float("nan"))
            print(f"crossfit: data by {maker}, fitted by {fit.engine}: held-out {1000 * position:.1f} mm, "
                  f"{yaw:.1f} deg", file=sys.stderr, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output)")
    parser.add_argument("--iterations", type=int, default=40, help="iteration limit of each fit")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.iterations), default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
