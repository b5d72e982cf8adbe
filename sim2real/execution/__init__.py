"""Where per-trial work runs: this process, local worker processes or Ray; same results either way.

* :mod:`~sim2real.execution.base` — the :class:`Executor` interface (``map`` in order,
  ``share`` data once) and the :class:`Shared` handle;
* :mod:`~sim2real.execution.local` — :class:`LocalExecutor` and :func:`ordered_map`;
* :mod:`~sim2real.execution.raycluster` — :class:`~sim2real.execution.raycluster.RayExecutor`
  (imported only when asked for: Ray is an optional dependency);
* :mod:`~sim2real.execution.registry` — ``--executor`` names → executors.
"""

from sim2real.execution.base import Executor, Held, Shared
from sim2real.execution.local import LocalExecutor, WorkerDiedError, ordered_map
from sim2real.execution.registry import EXECUTORS, open_executor, parse_executor

__all__ = ["EXECUTORS", "Executor", "Held", "LocalExecutor", "Shared", "WorkerDiedError", "open_executor",
           "ordered_map", "parse_executor"]
