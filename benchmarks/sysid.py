"""Benchmark of system identification: a 3-parameter fit on 5 standard trials, and one
Jacobian by implicit gradients versus central finite differences of our own engine.

``python -m benchmarks.sysid --json`` prints one JSON object (medians over ``--repeat``).
The trials are the standard push (config/experiment.yaml) at the five standard distances,
simulated with hidden values of arm.servo_tau, arm.command_delay and contact.mu_table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings

from sim2real.control import load_experiment_config
from sim2real.params import ParameterSet
from sim2real.sysid import LMSettings, ResidualSpec, finite_difference_jacobian, fit_trials, prepare_trial
from sim2real.sysid.residuals import trial_residuals
from sim2real.trials.standard_trial import run_standard_trial

FREE = ("arm.servo_tau", "arm.command_delay", "contact.mu_table")
HIDDEN = {"arm.servo_tau": 0.065, "arm.command_delay": 0.011, "contact.mu_table": 0.35}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output)")
    parser.add_argument("--repeat", type=int, default=1, help="repetitions; medians are reported")
    parser.add_argument("--iterations", type=int, default=4, help="Gauss-Newton iterations of the fit")
    args = parser.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)
    nominal = ParameterSet.nominal()
    truth = nominal.replace(HIDDEN)
    distances = load_experiment_config().distances
    records = [run_standard_trial(d, truth).record(i) for i, d in enumerate(distances)]
    fit_s, jac_ift_s, jac_fd_s, errors = [], [], [], []
    for _ in range(max(args.repeat, 1)):
        start = time.perf_counter()
        result = fit_trials(records, nominal, FREE, horizon=1, settings=LMSettings(max_iterations=args.iterations))
        fit_s.append(time.perf_counter() - start)
        errors.append(max(abs(result.values[n] / HIDDEN[n] - 1.0) for n in FREE))
        data = prepare_trial(records[0], float(nominal["sim.dt"]))
        spec = ResidualSpec(horizon=1)
        start = time.perf_counter()
        trial_residuals(data, nominal, FREE, spec)
        jac_ift_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        finite_difference_jacobian(data, nominal, FREE, spec)
        jac_fd_s.append(time.perf_counter() - start)
    print(json.dumps({
        "benchmark": "sysid",
        "fit_trials": len(records), "fit_parameters": len(FREE), "fit_iterations_max": args.iterations,
        "fit_wall_s": statistics.median(fit_s),
        "fit_max_relative_error": statistics.median(errors),
        "jacobian_trial_steps": data.steps,
        "jacobian_implicit_s": statistics.median(jac_ift_s),
        "jacobian_central_fd_s": statistics.median(jac_fd_s),
        "repeat": max(args.repeat, 1),
    }))


if __name__ == "__main__":
    main()
