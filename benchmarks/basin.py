"""Which contact model gives the better gradients for fitting: the basin of convergence of a fit.

Known truth: the planar pushes of ``tests/fixtures/planar_pushes.py`` (a rod pushing a thin plate; six
training pushes, mocap noise 0.3 mm / 0.3°), made by our engine (hidden μ_table 0.25, μ_pusher 0.45,
support ratio 0.6) and by MuJoCo (μ_table 0.25, μ_pusher 0.45; MuJoCo contact with a smooth onset,
impedance 0.01 over 2 mm). Each fit starts from the truth scaled by ``1 + r u`` per parameter, with
``u`` a fixed set of sign patterns and ``r`` the start radius (10 % to 75 %; starts are clipped to the
bounds), and counts as converged when every value lands within 2 % of the truth. Configurations:
our engine with gradients at κ_sim (exact, the fit's default) and smoothed at κ_grad 1e-6, 1e-4,
1e-3; MuJoCo with finite-difference Jacobians.

``python -m benchmarks.basin --json``: per configuration and radius, how many starts converged and
their median iterations, and the basin (largest radius at which every start converged).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fixtures import planar_pushes as pushes

from sim2real.sysid import FitProblem, LMSettings, ResidualSpec, fit_trials
from sim2real.trials import read_trial

RADII = (0.1, 0.25, 0.5, 0.75)
SIGNS = ((1, 1, 1), (-1, 1, -1), (1, -1, -1), (-1, -1, 1))
SMOOTH = {"mujoco.impedance_min": 0.01, "mujoco.impedance_width": 0.002}
TRUTH = {"ours": {"contact.mu_table": 0.25, "contact.mu_pusher": 0.45, "contact.support_ratio": 0.6},
         "mujoco": {"contact.mu_table": 0.25, "contact.mu_pusher": 0.45}}
CONFIGS = (("ours", "kappa_sim"), ("ours", 1e-6), ("ours", 1e-4), ("ours", 1e-3), ("mujoco", None))


def _records(engine: str, root: Path) -> list:
    extra = SMOOTH if engine == "mujoco" else {}
    truth = pushes.params({**TRUTH[engine], **extra})
    run = pushes.write_pushes(root / engine, pushes.TRAINING, truth, 3e-4, 5e-3, seed=0, engine=engine)
    return [read_trial(run / f"push_{i:02d}") for i in range(len(pushes.TRAINING))]


def _start(engine: str, radius: float, signs: tuple[int, ...]) -> dict[str, float]:
    from sim2real.params import spec

    out = {}
    for (name, value), sign in zip(TRUTH[engine].items(), signs, strict=False):
        entry = spec(name)
        out[name] = min(max(value * (1.0 + sign * radius), entry.lower), entry.upper)
    return out


def run(iterations: int, radii: tuple[float, ...] = RADII, signs: tuple[tuple[int, ...], ...] = SIGNS
        ) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="basin_"))
    records = {engine: _records(engine, root) for engine in TRUTH}
    out: dict[str, Any] = {"radii": list(radii), "starts_per_radius": len(signs), "tolerance": 0.02,
                           "configurations": {}}
    for engine, kappa in CONFIGS:
        label = engine if kappa is None else f"{engine} kappa_grad={kappa}"
        rows = []
        for radius in radii:
            converged, its, walls = 0, [], []
            for pattern in signs:
                extra = SMOOTH if engine == "mujoco" else {}
                values = _start(engine, radius, pattern)
                if kappa not in (None, "kappa_sim"):
                    values["contact.kappa_grad"] = float(kappa)
                start = pushes.params({**extra, **values})
                clock = time.perf_counter()
                result = fit_trials(FitProblem(records[engine], start, ",".join(TRUTH[engine]),
                                               spec=ResidualSpec(horizon=None, pusher_shape="rod", engine=engine,
                                                                 exact_gradients=kappa in (None, "kappa_sim"))),
                                    settings=LMSettings(max_iterations=iterations))
                walls.append(time.perf_counter() - clock)
                ok = all(abs(result.values[n] / v - 1.0) <= 0.02 for n, v in TRUTH[engine].items())
                converged += ok
                if ok:
                    its.append(result.trace[-1]["iteration"])
            rows.append({"radius": radius, "converged": converged, "median_iterations": statistics.median(its)
                         if its else None, "median_fit_wall_s": statistics.median(walls)})
            print(f"basin: {label} radius {radius:g}: {converged}/{len(signs)}", file=sys.stderr, flush=True)
        basin = 0.0
        for row in rows:
            if row["converged"] < len(signs):
                break
            basin = row["radius"]
        out["configurations"][label] = {"rows": rows, "basin_radius": basin}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output)")
    parser.add_argument("--iterations", type=int, default=40, help="iteration limit of each fit")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.iterations)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
