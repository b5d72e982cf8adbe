"""Per-trial tasks travel to the executor in batches (:func:`sim2real.sysid.residuals.tasks.batches`): every task once,
in order, the batches' sizes within one of each other, a few per worker."""

import pytest

from sim2real.sysid.residuals.tasks import BATCHES_PER_WORKER, batches


@pytest.mark.parametrize("count, parallelism", [(0, 2), (1, 2), (5, 2), (12, 2), (570, 2), (571, 8), (40, 1)])
def test_batches_keep_every_task_in_order_with_even_sizes(count, parallelism):
    tasks = list(range(count))
    out = batches(tasks, parallelism)
    assert [t for batch in out for t in batch] == tasks
    assert len(out) == min(count, parallelism * BATCHES_PER_WORKER)
    if out:
        sizes = [len(b) for b in out]
        assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1
