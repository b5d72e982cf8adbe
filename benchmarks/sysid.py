"""Benchmark of system identification: a 3-parameter fit on 5 standard trials, and one
Jacobian by implicit gradients versus central finite differences of our own engine.

``python -m benchmarks.sysid --json`` prints one JSON object (medians over ``--repeat``).
The trials are the standard push (config/experiment.yaml) at the five standard distances,
simulated with hidden values of arm.servo_tau, arm.command_delay and contact.mu_table.

With ``--compare-trf`` (the default) it also compares our bounded Levenberg-Marquardt
(:func:`sim2real.sysid.solve.optimizer.levenberg_marquardt`, what ``fit_trials`` runs) with
``scipy.optimize.least_squares(method="trf", x_scale="jac")`` on the same residual and
implicit-gradient Jacobian callable, built as ``fit_trials`` builds it (free parameters, ties,
bounds, left-out trials), on two problems: the standard pushes above (horizon 1, from nominal)
and the README's cube-toss fit on tosses 0-29 of the ContactNets data (horizon 40). Both optimizers get the same
budget of ``--compare-iterations`` + 1 simulations; a simulation counts once per point (scipy's ``fun``
and ``jac`` at one point share it). JSON: ``optimizer_comparison`` (per problem: final cost,
values, simulations, iterations, wall time, stop reason) and ``optimizer_winner`` (lower final
cost when they differ by more than 0.1 % and are not both numerically zero, else fewer
simulations; over the problems, the one that won more of them, else "tie").
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import cube_toss
from sim2real.control import load_experiment_config
from sim2real.data import cube_toss_npz
from sim2real.errors import Sim2RealError
from sim2real.execution import open_executor
from sim2real.params import ParameterSet
from sim2real.sysid import (
    FitProblem,
    FreeParameters,
    LMSettings,
    ResidualSpec,
    Weights,
    finite_difference_jacobian,
    fit_trials,
    levenberg_marquardt,
    prepare_trial,
)
from sim2real.sysid.prediction import run_standard_trial
from sim2real.sysid.problem import unknowns
from sim2real.sysid.residuals import trial_residuals
from sim2real.sysid.solve import FitAbortedError, FitEvaluator, usable_trials
from sim2real.trials import TrialRecord, read_trial
from sim2real.trials.cube_toss import import_cube_tosses

FREE = ("arm.servo_tau", "arm.command_delay", "contact.mu_table")
HIDDEN = {"arm.servo_tau": 0.065, "arm.command_delay": 0.011, "contact.mu_table": 0.35}

#: The README's cube-toss fit (as in benchmarks.cube_toss), on the first block of 30 tosses.
CUBE_NPZ = cube_toss_npz()
CUBE_TOSSES = "0-29"
CUBE_FREE, CUBE_START = cube_toss.FREE, cube_toss.START
CUBE_HORIZON, CUBE_WEIGHTS = cube_toss.HORIZON, cube_toss.WEIGHTS

LM, TRF = "levenberg_marquardt", "scipy_trf"
#: Residuals scipy sees at a point whose simulation fails (the evaluator rejects it).
FAILED_RESIDUAL = 1e6
#: Final costs closer than this (relative) count as equal; then fewer simulations win.
COST_TOLERANCE = 1e-3
#: Final costs below this fraction of the start cost are numerically zero (and count as equal).
ZERO_COST = 1e-12


class _Counted:
    """An ``x -> (r, J)`` callable that counts its calls and the ones that raised :class:`Sim2RealError`."""

    def __init__(self, evaluate: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]) -> None:
        self._evaluate = evaluate
        self.evaluations = 0
        self.failed = 0

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.evaluations += 1
        try:
            return self._evaluate(x)
        except FitAbortedError:
            raise
        except Sim2RealError:
            self.failed += 1
            raise


class _ScipyFunctions:
    """``fun(x) -> r`` and ``jac(x) -> J`` of one ``x -> (r, J)`` callable, each point simulated once.

    A point whose evaluation is rejected (:class:`Sim2RealError`) gives ``FAILED_RESIDUAL`` in every row
    (a cost increase, so trf shrinks its trust region) and a zero Jacobian.
    """

    def __init__(self, evaluate: _Counted, rows: int, columns: int) -> None:
        self._evaluate = evaluate
        self._shape = (rows, columns)
        self._cache: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}

    def _at(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(x, dtype=float)
        key = x.tobytes()
        if key not in self._cache:
            try:
                self._cache[key] = self._evaluate(x.copy())
            except FitAbortedError:
                raise
            except Sim2RealError:
                self._cache[key] = (np.full(self._shape[0], FAILED_RESIDUAL), np.zeros(self._shape))
        return self._cache[key]

    def fun(self, x: np.ndarray) -> np.ndarray:
        return self._at(x)[0]

    def jac(self, x: np.ndarray) -> np.ndarray:
        return self._at(x)[1]


@dataclass
class _Problem:
    """A fit as ``fit_trials`` sets it up: the evaluator at its start, bounds, typical magnitudes."""

    name: str
    description: str
    free: FreeParameters
    evaluator: FitEvaluator
    x0: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    typical: np.ndarray
    rows: int
    cost_start: float
    trials: int
    left_out: list[str]


def _problem(executor: Any, name: str, description: str, records: Sequence[TrialRecord], start: ParameterSet,
             free: Sequence[str] | str, horizon: int | None, weights: Weights) -> _Problem:
    """The residual/Jacobian callable, start, bounds and scales exactly as :func:`fit_trials` makes them."""
    free_set = FreeParameters.parse(free)
    spec_ = ResidualSpec(horizon=horizon, weights=weights, mode="auto", pusher="auto", strict=False)
    setup = unknowns(free_set, start)
    start, x0, lower, upper, typical = setup.start, setup.x0, setup.lower, setup.upper, setup.typical
    trials, failures = usable_trials(records, start, spec_, free_set.names)
    evaluator = FitEvaluator(executor, trials, start, free_set.parameters, free_set.place_groups, free_set.columns,
                             spec_)
    left_out = [f.name for f in failures + evaluator.start(x0)]
    if not evaluator.start_results:
        raise Sim2RealError(f"{name}: no trial can be fitted ({', '.join(left_out)})")
    r, _ = evaluator(x0)  # the cached start evaluation
    return _Problem(name, description, free_set, evaluator, x0, lower, upper, typical, int(r.shape[0]),
                    float(0.5 * np.sum(r**2)), len(evaluator.trials), left_out)


def _run_lm(problem: _Problem, iterations: int) -> dict[str, Any]:
    counted = _Counted(problem.evaluator)
    clock = time.perf_counter()
    result = levenberg_marquardt(counted, problem.x0, problem.lower, problem.upper,
                                 LMSettings(max_iterations=iterations), None, problem.typical)
    seconds = time.perf_counter() - clock
    return {"cost": float(result.cost), "values": problem.free.expand(result.x), "evaluations": counted.evaluations,
            "failed_evaluations": counted.failed, "iterations": int(result.trace[-1].iteration),
            "accepted_steps": sum(1 for e in result.trace[1:] if e.accepted), "wall_s": seconds,
            "stop_reason": result.stop_reason}


def _run_trf(problem: _Problem, iterations: int) -> dict[str, Any]:
    from scipy.optimize import least_squares

    counted = _Counted(problem.evaluator)
    functions = _ScipyFunctions(counted, problem.rows, len(problem.x0))
    nit = [0]

    def callback(intermediate_result: Any) -> None:  # scipy passes the OptimizeResult to this parameter name
        nit[0] = int(intermediate_result.nit)

    clock = time.perf_counter()
    result = least_squares(functions.fun, problem.x0, jac=functions.jac, bounds=(problem.lower, problem.upper),
                           method="trf", x_scale="jac", max_nfev=iterations + 1, callback=callback)
    seconds = time.perf_counter() - clock
    return {"cost": float(result.cost), "values": problem.free.expand(result.x), "evaluations": counted.evaluations,
            "failed_evaluations": counted.failed, "iterations": nit[0], "accepted_steps": int(result.njev) - 1,
            "nfev": int(result.nfev), "njev": int(result.njev), "wall_s": seconds, "status": int(result.status),
            "stop_reason": str(result.message)}


def _judge(lm: dict[str, Any], trf: dict[str, Any], cost_start: float) -> tuple[str, str]:
    """The better optimizer on one problem and why: lower final cost (beyond 0.1 %), else fewer simulations.

    Costs below ``ZERO_COST`` times the start cost count as equal (both fitted noise-free data exactly).
    """
    costs = {LM: lm["cost"], TRF: trf["cost"]}
    low, high = sorted(costs, key=lambda k: costs[k])
    if costs[high] - costs[low] > COST_TOLERANCE * abs(costs[low]) and costs[high] > ZERO_COST * cost_start:
        return low, (f"lower final cost: {costs[low]:.6g} vs {costs[high]:.6g} "
                     f"({100 * (costs[high] - costs[low]) / costs[high]:.2f} % lower)")
    within = f"final costs within {100 * COST_TOLERANCE:g} % ({costs[LM]:.6g} vs {costs[TRF]:.6g})"
    if lm["evaluations"] == trf["evaluations"]:
        return "tie", f"{within} and {lm['evaluations']} simulations each"
    fewer = LM if lm["evaluations"] < trf["evaluations"] else TRF
    return fewer, f"{within}; fewer simulations: {lm['evaluations']} (LM) vs {trf['evaluations']} (trf)"


def _compare(problem: _Problem, iterations: int) -> dict[str, Any]:
    print(f"{problem.name}: {problem.trials} trial(s), {problem.rows} residuals, {len(problem.x0)} unknowns; "
          "levenberg_marquardt ...", file=sys.stderr, flush=True)
    lm = _run_lm(problem, iterations)
    print(f"{problem.name}: cost {lm['cost']:.6g}, {lm['evaluations']} simulations, {lm['wall_s']:.1f} s; "
          "scipy trf ...", file=sys.stderr, flush=True)
    trf = _run_trf(problem, iterations)
    print(f"{problem.name}: cost {trf['cost']:.6g}, {trf['evaluations']} simulations, {trf['wall_s']:.1f} s",
          file=sys.stderr, flush=True)
    winner, reason = _judge(lm, trf, problem.cost_start)
    return {"problem": problem.description, "unknowns": list(problem.free.labels),
            "tied": [list(g) for g in problem.free.groups if len(g) > 1], "trials": problem.trials,
            "trials_left_out": problem.left_out, "residuals": problem.rows,
            "start": problem.free.expand(problem.x0), "cost_start": problem.cost_start,
            "bounds": {lab: [float(lo), float(hi)] for lab, lo, hi in
                       zip(problem.free.labels, problem.lower, problem.upper, strict=True)},
            "simulation_budget": iterations + 1, LM: lm, TRF: trf, "winner": winner, "reason": reason}


def _cube_records(npz: Path) -> list[TrialRecord]:
    with tempfile.TemporaryDirectory() as tmp:
        paths = import_cube_tosses(npz, Path(tmp) / "tosses", CUBE_TOSSES)
        return [read_trial(p) for p in paths]


def optimizer_comparison(records: Sequence[TrialRecord], nominal: ParameterSet, iterations: int,
                         workers: int) -> dict[str, Any]:
    """``optimizer_comparison`` (per problem) and ``optimizer_winner`` of the JSON output."""
    out: dict[str, Any] = {}
    with open_executor("local", workers) as executor:
        problem = _problem(executor, "standard_pushes", f"{len(records)} standard pushes simulated with hidden "
                           f"{', '.join(FREE)}; horizon 1 from nominal", records, nominal, FREE, 1, Weights())
        out["standard_pushes"] = {**_compare(problem, iterations), "hidden": HIDDEN}
        start = nominal.replace(CUBE_START)
        problem = _problem(executor, "cube_tosses", f"ContactNets cube tosses {CUBE_TOSSES}, horizon "
                           f"{CUBE_HORIZON}, weights {CUBE_WEIGHTS}, from a 0.095 m cube (measured 0.1048 m)",
                           _cube_records(CUBE_NPZ), start, CUBE_FREE, CUBE_HORIZON, Weights.parse(CUBE_WEIGHTS))
        out["cube_tosses"] = _compare(problem, iterations)
    judged = {name: entry["winner"] for name, entry in out.items() if "winner" in entry}
    wins = {k: sum(1 for w in judged.values() if w == k) for k in (LM, TRF)}
    overall = LM if wins[LM] > wins[TRF] else TRF if wins[TRF] > wins[LM] else "tie"
    reason = (f"won {wins[overall]} of {len(judged)} problem(s)" if overall != "tie" else
              f"{wins[LM]} to {wins[TRF]} of {len(judged)} problem(s)") + " (per problem: lower final cost beyond " \
        f"{100 * COST_TOLERANCE:g} %, else fewer simulations): " + \
        "; ".join(f"{name}: {out[name]['winner']}, {out[name]['reason']}" for name in judged)
    return {"optimizer_comparison": out, "optimizer_winner": overall, "optimizer_winner_reason": reason}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output)")
    parser.add_argument("--repeat", type=int, default=1, help="repetitions; medians are reported")
    parser.add_argument("--iterations", type=int, default=4, help="Gauss-Newton iterations of the fit")
    parser.add_argument("--compare-trf", action=argparse.BooleanOptionalAction, default=True,
                        help="compare our Levenberg-Marquardt with scipy's least_squares trf (default on)")
    parser.add_argument("--compare-iterations", type=int, default=30,
                        help="comparison budget: LM iterations, and iterations + 1 simulations for either (default 30)")
    parser.add_argument("--workers", type=int, default=1, help="processes evaluating trials in the comparison")
    parser.add_argument("--basin", action=argparse.BooleanOptionalAction, default=False,
                        help="also the basin of convergence of our engine at four gradient kappas and of MuJoCo "
                             "(benchmarks.basin, about 8 minutes; make bench runs that module on its own)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)
    nominal = ParameterSet.nominal()
    truth = nominal.replace(HIDDEN)
    distances = load_experiment_config().distances
    records = [run_standard_trial(d, truth).record(i) for i, d in enumerate(distances)]
    fit_s, jac_ift_s, jac_fd_s, errors = [], [], [], []
    for _ in range(max(args.repeat, 1)):
        start = time.perf_counter()
        result = fit_trials(FitProblem(records, nominal, FREE, spec=ResidualSpec(horizon=1)),
                            settings=LMSettings(max_iterations=args.iterations))
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
    out: dict[str, Any] = {
        "benchmark": "sysid",
        "fit_trials": len(records), "fit_parameters": len(FREE), "fit_iterations_max": args.iterations,
        "fit_wall_s": statistics.median(fit_s),
        "fit_max_relative_error": statistics.median(errors),
        "jacobian_trial_steps": data.steps,
        "jacobian_implicit_s": statistics.median(jac_ift_s),
        "jacobian_central_fd_s": statistics.median(jac_fd_s),
        "repeat": max(args.repeat, 1),
    }
    if args.compare_trf:
        out.update(optimizer_comparison(records, nominal, args.compare_iterations, args.workers))
    if args.basin:
        from benchmarks.basin import run as basin

        out["basin"] = basin(40)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
