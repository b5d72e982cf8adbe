"""``sim2real resolve-step``: solve a saved hard step again and print what the solver did."""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``resolve-step`` subcommand."""
    parser = subparsers.add_parser(
        "resolve-step", help="re-solve a saved hard contact step (a hard-step JSON file) and print the solver trace",
        description="Solve one saved engine step again, through the same escalation ladder as the simulator "
                    "(first solve; more iterations; 4 sub-steps; relaxed continuation re-tightened to kappa; "
                    "then, degraded: relaxed kappa 1e-6 and 1e-4; best iterate), and print one line per rung "
                    "tried. Hard-step files are written automatically for every recovered or degraded step into "
                    "<trial>/hard_steps/ (simulate --out, run, replay) and, for a fit, into a folder beside its "
                    "params file named after it, <OUT stem>.hard_steps/ (fit --out fitted.yaml: fitted.hard_steps/).",
        epilog="Exit status: 0 converged or recovered, 1 degraded (a state was returned but it does not meet "
               "the tolerances at the requested kappa), 2 bad input or, with --strict, a step that would be "
               "degraded. Violations are scaled: equality rows in units of m g dt (impulses) and g dt "
               "(velocities), complementarity in units of their product.")
    parser.add_argument("files", nargs="+", metavar="FILE", help="hard-step JSON file(s)")
    parser.add_argument("--trace", action="store_true",
                        help="also print every interior-point iteration (sub-step, kappa target, violations, step)")
    parser.add_argument("--strict", action="store_true", help="raise instead of returning a degraded answer")
    parser.add_argument("--json", action="store_true", help="print one JSON object per file instead of text")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``sim2real resolve-step``."""
    import numpy as np

    from sim2real.physics import kernels
    from sim2real.physics.ladder import HardStep, solve_step
    from sim2real.sim.outcome import StepOutcome

    problems = [(path, HardStep.load(path)) for path in args.files]  # every file read before any work
    worst = StepOutcome.CONVERGED
    for path, problem in problems:
        solution = solve_step(problem, strict=args.strict, trace=args.trace or args.json)
        worst = max(worst, solution.outcome)
        if args.json:
            print(json.dumps({
                "file": str(path), "outcome": solution.outcome.label, "rung": solution.rung.name,
                "kappa": solution.kappa, "next_state": solution.next_state.tolist(),
                "attempts": [{"rung": a.rung.name, "status": a.describe().split(":")[0].split(maxsplit=1)[1],
                              "iterations": a.iterations, "residual": a.residual,
                              "complementarity": a.complementarity, "path_error": a.path_error,
                              "trace": None if a.trace is None else a.trace.tolist()}
                             for a in solution.attempts]}))
            continue
        where = f"{problem.context} step {problem.step_index}" if problem.context else f"step {problem.step_index}"
        print(f"{path}: {where}; recorded {problem.outcome or '?'} ({problem.rung or '?'})")
        for attempt in solution.attempts:
            print(f"  {attempt.describe()}")
            if args.trace and attempt.trace is not None:
                print("    " + " ".join(f"{c:>15}" for c in kernels.TRACE_COLUMNS))
                for row in attempt.trace:
                    print("    " + " ".join(f"{v:15.6g}" for v in row))
        state = np.array2string(solution.next_state, precision=6, max_line_width=200)
        print(f"  => {solution.outcome.label} by rung '{solution.rung.name}' at kappa={solution.kappa:g}; "
              f"next state {state}")
    sys.stdout.flush()
    return 1 if worst == StepOutcome.DEGRADED else 0
