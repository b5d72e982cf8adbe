"""Benchmark: one standard simulated trial, forward and with whole-trial gradients.

``python -m benchmarks.trial --json`` prints one JSON object with the medians over
``--repeat`` runs of the standard push (box at 0.40 m, nominal parameters): ``trial_forward_s``
and ``trial_with_grad_s`` (gradients with respect to six parameters), and how many times faster than real
time each is (the trial's simulated seconds over the wall seconds). Targets on 2 cores: ≤ 2 s and ≤ 3 s,
and with gradients at least 30 times faster than real time (issue 33).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

GRAD_NAMES = ("contact.mu_table", "contact.mu_pusher", "box.com_z", "arm.servo_tau", "arm.command_delay", "pd.kp")


def main() -> None:
    """Run the benchmark and print JSON (or a short text summary)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--repeat", type=int, default=9, help="runs per measurement (median; default 9)")
    parser.add_argument("--distance", type=float, default=0.40, help="box start distance, m")
    args = parser.parse_args()

    from sim2real.control import load_experiment_config, plan_push
    from sim2real.model import load_arm
    from sim2real.params import ParameterSet
    from sim2real.sysid.prediction import run_standard_trial

    params = ParameterSet.nominal()
    reference = plan_push(load_arm(params), load_experiment_config().push)
    steps = len(reference.t) - 1

    def timed(grad_names: tuple[str, ...]) -> float:
        samples = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            run_standard_trial(args.distance, params, grad_names, reference=reference)
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)

    forward = timed(())
    with_grad = timed(GRAD_NAMES)
    simulated = steps * float(params["sim.dt"])
    result = {
        "benchmark": "trial", "steps": steps, "dt_s": float(params["sim.dt"]), "distance_m": args.distance,
        "repeat": args.repeat, "trial_forward_s": forward, "trial_with_grad_s": with_grad,
        "grad_parameters": list(GRAD_NAMES), "grad_overhead_ratio": with_grad / forward,
        "real_time_factor_forward": simulated / forward, "real_time_factor_with_grad": simulated / with_grad,
        "targets": {"trial_forward_s": 2.0, "trial_with_grad_s": 3.0, "real_time_factor_with_grad": 30.0},
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"forward {forward:.3f} s, with gradients {with_grad:.3f} s ({steps} steps, "
              f"{simulated / with_grad:.1f} times faster than real time with gradients)")


if __name__ == "__main__":
    main()
