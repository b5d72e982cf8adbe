"""How steps ended: the outcome classes of a solve and their per-trial tally.

A step of every engine always returns a state; its outcome says how much to trust it. In our engine's
terms (:mod:`sim2real.physics.ladder`):

* ``CONVERGED`` — the first solve met every tolerance at the requested central-path value κ;
* ``RECOVERED`` — a later rung of the escalation ladder (more iterations, sub-steps, a relaxed
  continuation target re-tightened to κ) met every tolerance at the requested κ: as exact as a
  converged step, only dearer;
* ``DEGRADED`` — no rung converged at the requested κ: the state is the solution at a relaxed κ
  (softer contact) or the best iterate found; its violations are recorded and it is flagged
  wherever it is used (trial.json, fit.json, the report, the console summary).

A recovered or degraded step comes with the engine's :class:`Reproduction` of it, which
:class:`~sim2real.sim.solve_log.SolveLog` keeps and :func:`~sim2real.sim.solve_log.save_hard_steps` writes.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


class StepOutcome(enum.IntEnum):
    """Outcome class of one step (ordered: larger is worse)."""

    CONVERGED = 0
    RECOVERED = 1
    DEGRADED = 2

    @property
    def label(self) -> str:
        """Lower-case name, as written in trial.json and reports."""
        return self.name.lower()


@runtime_checkable
class Reproduction(Protocol):
    """An engine's self-contained record of one step that was hard to solve (recovered or degraded).

    Attributes
    ----------
    step_index : int or None
        The step's index in its run (None: not known).
    """

    @property
    def step_index(self) -> int | None: ...

    def with_context(self, **changes: Any) -> Reproduction:
        """A copy with ``context`` (where the step comes from), ``step_index``, ``outcome``, ``rung`` or
        ``violation`` changed."""
        ...

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the reproduction file's content)."""
        ...

    def save(self, path: Path) -> Path:
        """Write the record as JSON at ``path``; returns the path."""
        ...
