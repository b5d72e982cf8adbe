"""Where per-trial work runs: this process or local worker processes, same results either way.

* :mod:`~sim2real.execution.local` — :func:`ordered_map`: results in task order, a bounded
  number of tasks in flight, workers that leave Ctrl-C to the parent.
"""

from sim2real.execution.local import WorkerDiedError, ordered_map

__all__ = ["WorkerDiedError", "ordered_map"]
