"""Counting a family of robustness cases: :class:`Tally`, the runner and the failed-step capture.

A family is a sequence of cases (a label, the simulation, the groups known before running it); the
runner counts what every case returned, and an exception of any kind as an abort (a case never
stops the family). See :mod:`benchmarks.robustness` for how to read the counts.
"""

from __future__ import annotations

import contextlib
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sim2real.physics import HardStep
from sim2real.sim import SolveSummary

#: Exception messages printed to stderr per family.
MAX_PRINTED_ERRORS = 5


def _severity(hard: HardStep) -> tuple[bool, float]:
    """Sort key putting the worst hard step first: degraded before recovered, then larger residual."""
    return hard.outcome != "degraded", -hard.violation[0]


@dataclass
class Tally:
    """Outcome tally of one family of trials."""

    name: str
    trials: int = 0
    aborted: int = 0
    summary: SolveSummary = field(default_factory=SolveSummary)
    degraded_trials: int = 0
    recovered_trials: int = 0
    worst_trial: str = ""
    degraded_by: dict[str, int] = field(default_factory=dict)
    trials_by: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    hard: list[tuple[str, HardStep]] = field(default_factory=list)
    failed: list[tuple[str, HardStep]] = field(default_factory=list)
    wall_s: float = 0.0

    def add(self, label: str, solve: SolveSummary, hard_steps: tuple[HardStep, ...], groups: tuple[str, ...]) -> None:
        """Count one trial that returned."""
        self.trials += 1
        if (solve.worst, solve.worst_residual) > (self.summary.worst, self.summary.worst_residual):
            self.worst_trial = label
        self.summary = self.summary.merged(solve)
        self.recovered_trials += int(solve.recovered > 0)
        self.degraded_trials += int(solve.degraded > 0)
        for group in groups:
            self.trials_by[group] = self.trials_by.get(group, 0) + 1
            if solve.degraded:
                self.degraded_by[group] = self.degraded_by.get(group, 0) + solve.degraded
        # keep a few reproduction records: the worst (degraded first, then by residual) of the family
        for hard in sorted(hard_steps, key=_severity)[:3]:
            self.hard.append((label, hard))
        self.hard.sort(key=lambda item: _severity(item[1]))
        del self.hard[12:]

    def abort(self, label: str, err: BaseException) -> None:
        """Count one trial that raised."""
        self.trials += 1
        self.aborted += 1
        if len(self.errors) < MAX_PRINTED_ERRORS:
            self.errors.append(f"{self.name} {label}: {type(err).__name__}: {err}")
            print(f"robustness: {self.errors[-1]}", file=sys.stderr)
            traceback.print_exc(limit=3, file=sys.stderr)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready counts."""
        s = self.summary
        return {
            "trials": self.trials, "aborted": self.aborted, "steps": s.steps, "converged": s.converged,
            "recovered": s.recovered, "degraded": s.degraded,
            "degraded_per_million_steps": round(1e6 * s.degraded / s.steps, 3) if s.steps else 0.0,
            "recovered_per_million_steps": round(1e6 * s.recovered / s.steps, 3) if s.steps else 0.0,
            "worst_residual": s.worst_residual, "worst_complementarity": s.worst_complementarity,
            "worst_trial": self.worst_trial or None, "rungs": dict(sorted(s.rungs.items())),
            "recovered_trials": self.recovered_trials, "degraded_trials": self.degraded_trials,
            "degraded_by": dict(sorted(self.degraded_by.items())), "trials_by": dict(sorted(self.trials_by.items())),
            "errors": list(self.errors), "wall_s": round(self.wall_s, 2),
        }


#: One case: a label, the simulation (returning its tally, hard steps and groups known only after
#: running), and the groups known before.
CaseResult = tuple[SolveSummary, tuple[HardStep, ...], tuple[str, ...]]
Cases = Iterator[tuple[str, Callable[[], CaseResult], tuple[str, ...]]]


@contextlib.contextmanager
def capture_failed_steps(sink: list[HardStep] | None) -> Iterator[None]:
    """Record the problem of every engine step whose solve raises into ``sink`` (None: do nothing).

    The engine's :class:`~sim2real.sim.SimulationError` names the step but does not carry its
    problem, so the solve called by ``BoxWorld.step`` is wrapped for the duration (benchmark only).
    """
    from sim2real.physics import world as world_module

    original = getattr(world_module, "solve_step", None)
    if sink is None or original is None:
        yield
        return

    def solve_step(problem: HardStep, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(problem, *args, **kwargs)
        except Exception:
            sink.append(problem)
            raise

    world_module.solve_step = solve_step
    try:
        yield
    finally:
        world_module.solve_step = original


#: Problems of steps whose solve raised (filled while ``--save-cases`` is given).
FAILED_STEPS: list[HardStep] = []


def run_cases(tally: Tally, cases: Cases) -> Tally:
    """Run every case, counting outcomes and exceptions (a case never stops the family)."""
    t0 = time.perf_counter()
    for label, case, groups in cases:
        seen = len(FAILED_STEPS)
        try:
            solve, hard_steps, found = case()
        except Exception as err:  # an abort of any kind is what this benchmark counts
            tally.abort(label, err)
            if len(FAILED_STEPS) > seen:
                tally.failed.append((label, FAILED_STEPS[-1].with_context(context=f"{label} (aborted: {err})",
                                                                         outcome="failed")))
            continue
        tally.add(label, solve, hard_steps, groups + found)
    tally.wall_s = time.perf_counter() - t0
    return tally


