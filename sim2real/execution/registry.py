"""Choosing an executor by name: ``--executor local`` (default) or ``--executor ray[:ADDRESS]``.

A new executor enters here: a factory taking the part after the colon (None without one), the
``--workers`` count and a callable for one-line progress messages (or None), returning an
:class:`~sim2real.execution.base.Executor`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from sim2real.errors import Sim2RealError
from sim2real.execution.base import Executor
from sim2real.execution.local import LocalExecutor

#: A receiver of one-line progress messages.
Say = Callable[[str], None]


def _local(address: str | None, workers: int, say: Say | None) -> Executor:
    return LocalExecutor(workers)


def _ray(address: str | None, workers: int, say: Say | None) -> Executor:
    from sim2real.execution.raycluster import RayExecutor

    return RayExecutor(address, workers, say)


#: Executor factories by name.
EXECUTORS: dict[str, Callable[[str | None, int, Say | None], Executor]] = {"local": _local, "ray": _ray}
#: Executors that run on this machine only (no ``:ADDRESS``).
LOCAL_ONLY = frozenset({"local"})


def parse_executor(text: str) -> tuple[str, str | None]:
    """``"local"`` → ("local", None); ``"ray:HOST:PORT"`` → ("ray", "HOST:PORT").

    Raises
    ------
    Sim2RealError
        Unknown name or an empty address.
    """
    name, sep, address = text.partition(":")
    if name not in EXECUTORS:
        raise Sim2RealError(f"--executor must be one of {', '.join(sorted(EXECUTORS))} (ray:ADDRESS joins a "
                            f"cluster), got '{text}'")
    if sep and name in LOCAL_ONLY:
        raise Sim2RealError(f"--executor {name} takes no address, got '{text}'")
    if sep and not address.strip():
        raise Sim2RealError(f"--executor {name}: the address after ':' is empty")
    return name, (address.strip() if sep else None)


@contextlib.contextmanager
def open_executor(spec: str = "local", workers: int = 1, say: Say | None = None) -> Iterator[Executor]:
    """The executor named by ``spec`` (see :func:`parse_executor`), closed on exit; ``say`` receives what
    a slow start is doing (starting or joining a Ray runtime), if anything.

    Raises
    ------
    Sim2RealError
        Bad spec, bad ``workers``, or the executor cannot start.
    """
    name, address = parse_executor(spec)
    executor = EXECUTORS[name](address, workers, say)
    try:
        yield executor
    finally:
        executor.close()
