"""The tally of a run's step outcomes (:class:`SolveSummary`), the log that keeps it (:class:`SolveLog`), and the
reproduction files of its hard steps (:func:`save_hard_steps`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sim2real.sim.outcome import Reproduction, StepOutcome

if TYPE_CHECKING:
    from sim2real.sim.step import StepResult

#: Hard steps kept per log for reproduction files (the tally counts every step).
MAX_HARD_STEPS = 20


@dataclass(frozen=True)
class SolveSummary:
    """Tally of step outcomes over a rollout, a trial or a fit.

    Attributes
    ----------
    steps : int
        Steps counted.
    converged, recovered, degraded : int
        Steps per outcome class (they add up to ``steps``).
    worst_residual : float
        Largest scaled equality-row violation of a recovered or degraded step (0 if none).
    worst_complementarity : float
        Largest scaled complementarity product of a degraded step (0 if none; the relaxed κ for a
        step accepted at a relaxed central-path value).
    worst_step : int or None
        Index of the worst degraded (else recovered) step, in the numbering of the log.
    rungs : dict of str to int
        How many steps ended on each escalation rung (``"first"`` not listed).
    """

    steps: int = 0
    converged: int = 0
    recovered: int = 0
    degraded: int = 0
    worst_residual: float = 0.0
    worst_complementarity: float = 0.0
    worst_step: int | None = None
    rungs: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No degraded step."""
        return self.degraded == 0

    @property
    def worst(self) -> StepOutcome:
        """The worst outcome counted."""
        if self.degraded:
            return StepOutcome.DEGRADED
        return StepOutcome.RECOVERED if self.recovered else StepOutcome.CONVERGED

    def merged(self, other: SolveSummary) -> SolveSummary:
        """The tally of both (step indices of ``other`` are not renumbered)."""
        rungs = dict(self.rungs)
        for name, count in other.rungs.items():
            rungs[name] = rungs.get(name, 0) + count
        mine = (self.worst, self.worst_residual)
        theirs = (other.worst, other.worst_residual)
        worst_step = self.worst_step if mine >= theirs else other.worst_step
        return SolveSummary(
            self.steps + other.steps, self.converged + other.converged, self.recovered + other.recovered,
            self.degraded + other.degraded, max(self.worst_residual, other.worst_residual),
            max(self.worst_complementarity, other.worst_complementarity), worst_step, rungs)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (trial.json ``solver``, fit.json)."""
        return {"steps": self.steps, "converged": self.converged, "recovered": self.recovered,
                "degraded": self.degraded, "worst_residual": self.worst_residual,
                "worst_complementarity": self.worst_complementarity, "worst_step": self.worst_step,
                "rungs": dict(self.rungs), "worst": self.worst.label}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SolveSummary:
        """Inverse of :meth:`as_dict`."""
        return cls(int(data.get("steps", 0)), int(data.get("converged", 0)), int(data.get("recovered", 0)),
                   int(data.get("degraded", 0)), float(data.get("worst_residual", 0.0)),
                   float(data.get("worst_complementarity", 0.0)), data.get("worst_step"),
                   {str(k): int(v) for k, v in dict(data.get("rungs", {})).items()})

    def describe(self) -> str:
        """One line for consoles: ``226 steps: 225 converged, 1 recovered, 0 degraded``."""
        text = (f"{self.steps} steps: {self.converged} converged, {self.recovered} recovered, "
                f"{self.degraded} degraded")
        if self.degraded:
            text += (f" (worst at step {self.worst_step}: residual {self.worst_residual:.2g}, "
                     f"complementarity {self.worst_complementarity:.2g})")
        return text


class SolveLog:
    """Accumulates step outcomes (and the first :data:`MAX_HARD_STEPS` hard steps) of one rollout.

    Parameters
    ----------
    context : str
        Where the steps come from (e.g. ``"trial_02_d0.400 sim"``); stored in hard-step files.
    """

    def __init__(self, context: str = "") -> None:
        self.context = context
        self._outcomes: list[int] = []
        self._recovered = 0
        self._degraded = 0
        self._worst_residual = 0.0
        self._worst_complementarity = 0.0
        self._worst_key: tuple[int, float] = (0, -1.0)
        self._worst_step: int | None = None
        self._rungs: dict[str, int] = {}
        self.hard_steps: list[Reproduction] = []

    def record(self, result: StepResult, step_index: int | None = None) -> None:
        """Count one :class:`~sim2real.sim.step.StepResult` (its ``outcome``, ``rung``, ``problem``)."""
        outcome = StepOutcome(result.outcome)
        index = len(self._outcomes) if step_index is None else int(step_index)
        self._outcomes.append(int(outcome))
        if outcome == StepOutcome.CONVERGED:
            return
        self._rungs[result.rung] = self._rungs.get(result.rung, 0) + 1
        residual, complementarity = (float(v) for v in result.violation)
        if outcome == StepOutcome.RECOVERED:
            self._recovered += 1
            self._worst_residual = max(self._worst_residual, residual)
        else:
            self._degraded += 1
            self._worst_residual = max(self._worst_residual, residual)
            self._worst_complementarity = max(self._worst_complementarity, complementarity, float(result.kappa))
        key = (int(outcome), residual)
        if key > self._worst_key:
            self._worst_key = key
            self._worst_step = index
        problem = result.problem
        if problem is not None and len(self.hard_steps) < MAX_HARD_STEPS:
            self.hard_steps.append(problem.with_context(context=self.context, step_index=index))

    def converged(self, steps: int) -> None:
        """Count ``steps`` consecutive steps that converged on the first rung (a compiled run of steps)."""
        self._outcomes.extend([int(StepOutcome.CONVERGED)] * steps)

    @property
    def outcomes(self) -> np.ndarray:
        """Outcome code per recorded step, shape (T,), int (see :class:`StepOutcome`)."""
        return np.array(self._outcomes, dtype=np.int8)

    def summary(self) -> SolveSummary:
        """The tally so far."""
        steps = len(self._outcomes)
        return SolveSummary(steps, steps - self._recovered - self._degraded, self._recovered, self._degraded,
                            self._worst_residual, self._worst_complementarity, self._worst_step, dict(self._rungs))


def save_hard_steps(directory: str | Path, hard_steps: Sequence[Reproduction], prefix: str = "") -> list[Path]:
    """Write reproduction records as ``<directory>/<prefix>step_<index>.json`` (new names only); returns the paths."""
    directory = Path(directory)
    paths = []
    for number, hard in enumerate(hard_steps):
        index = hard.step_index if hard.step_index is not None else number
        path = directory / f"{prefix}step_{index:05d}.json"
        suffix = 1
        while path.exists():
            path = directory / f"{prefix}step_{index:05d}_{suffix}.json"
            suffix += 1
        paths.append(hard.save(path))
    return paths
