"""Ray execution: per-trial tasks on a local Ray runtime or on an existing Ray cluster.

``--executor ray`` starts a private local runtime of ``--workers`` CPUs that listens on
127.0.0.1 only and is stopped at the end; ``--executor ray:ADDRESS`` joins the cluster at
ADDRESS (``HOST:PORT`` of its head, or ``ray://HOST:PORT`` through Ray Client), which must
run the same Python, Ray and sim2real versions. Nothing else is ever connected to: without
an address no existing cluster is looked for.

Results come back in the items' order, so a fit gives the same numbers as with the local
executor. Data shared by many tasks goes to Ray's object store once (:meth:`RayExecutor.share`).
A task whose worker dies (killed, out of memory, node lost) is retried by Ray up to
:data:`MAX_RETRIES` times; only then does the map fail. Each worker loads the engine's
compiled kernels when it starts (:func:`warm_worker`).

Ray itself (2.60) probes cloud metadata addresses (169.254.169.254, metadata.google.internal)
once at start-up to label its usage statistics, even with statistics off, and public DNS
(8.8.8.8:53) to learn the machine's address: the tests run Ray inside a network namespace of
their own.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from sim2real.errors import Sim2RealError
from sim2real.execution.local import IN_FLIGHT_PER_WORKER, WorkerDiedError

T = TypeVar("T")
R = TypeVar("R")

#: Retries of a task whose worker died before Ray gives up on it.
MAX_RETRIES = 3
#: Environment of a private local runtime: every Ray server on 127.0.0.1 (Ray picks the
#: loopback address as the node address when clusters are off), no usage statistics. Ray turns
#: token authentication on for a new local runtime (it sets ``RAY_AUTH_MODE``); its token
#: (``RAY_AUTH_TOKEN``, see :func:`_local_runtime_env`) is random and held in memory, since Ray
#: would otherwise write one to ``~/.ray/auth_token``. Its workers run at this process's scheduling
#: priority, as the local executor's do: Ray lowers them to nice 15 by default, which beside 4 CPU-bound
#: processes left a fit's tasks a few per cent of a core (a 30 s test fit took 316 s).
LOCAL_RUNTIME_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
                     "RAY_worker_niceness": "0"}
#: Said when joining a cluster fails: Ray 2.60's ``ray start`` turns token authentication on
#: when it finds a token, and Ray never sends a token to an address given explicitly unless told.
AUTH_HINT = ("if the cluster uses token authentication, set RAY_AUTH_MODE=token and its token "
             "(~/.ray/auth_token, RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN)")
INSTALL_HINT = "pip install 'ray[client]>=2.60,<2.61' (the extra sim2real[ray])"


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise Sim2RealError(f"--executor ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


#: How long to wait for the cluster's head to accept a connection (s); Ray itself would retry forever.
CONNECT_TIMEOUT = 5.0


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Fail fast when nothing accepts connections at ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``).

    ``auto`` is left to Ray (it looks for a cluster started on this machine).

    Raises
    ------
    Sim2RealError
        Malformed address, or no connection within ``timeout``.
    """
    if address == "auto":
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise Sim2RealError(f"--executor ray:ADDRESS needs HOST:PORT, ray://HOST:PORT or auto, got '{address}'")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as err:
        raise Sim2RealError(f"cannot reach the Ray cluster at '{address}': {err.strerror or err}") from None


_PROCESS_TOKEN: list[str] = []


def _local_runtime_env() -> dict[str, str]:
    """Environment for starting a private local runtime, with this process's random token.

    One token per process, not per runtime: Ray's driver caches the first token it loads, so a
    second runtime started by the same process must use the same one.
    """
    if not _PROCESS_TOKEN:
        _PROCESS_TOKEN.append(secrets.token_hex(32))
    return {**LOCAL_RUNTIME_ENV, "RAY_AUTH_TOKEN": _PROCESS_TOKEN[0]}


def warm_worker() -> None:
    """Worker start-up hook: every registered engine prepared (kernels loaded or compiled) before the first task."""
    from sim2real.engines import ENGINES
    from sim2real.params import ParameterSet

    params = ParameterSet.nominal()
    for entry in ENGINES.values():
        if entry.warm_up is not None:
            entry.warm_up(params, gradients=True)


@dataclass(frozen=True)
class RayShared:
    """A value in Ray's object store; :meth:`get` in a task returns it."""

    ref: Any

    def get(self) -> Any:
        """The stored object (numpy arrays are read from shared memory on the same node)."""
        return _ray().get(self.ref)


class RayExecutor:
    """Tasks on Ray: a private local runtime (``address`` None) or the cluster at ``address``.

    Parameters
    ----------
    address : str or None
        None: start a local runtime with ``workers`` CPUs on loopback; otherwise the address
        of an existing cluster (``HOST:PORT``, ``ray://HOST:PORT`` or ``auto``), as the user named it.
    workers : int
        CPUs of the local runtime; ignored with an address (the cluster's CPUs are used).
    say : callable, optional
        Receives a line before the runtime is started or joined (it takes seconds idle, minutes on a
        busy machine).

    Raises
    ------
    Sim2RealError
        Ray is not installed, a Ray runtime is already running in this process, or the
        cluster cannot be reached.
    """

    def __init__(self, address: str | None, workers: int = 1, say: Callable[[str], None] | None = None) -> None:
        if workers < 1:
            raise Sim2RealError(f"--workers must be at least 1, got {workers}")
        ray = _ray()
        if ray.is_initialized():
            raise Sim2RealError("a Ray runtime is already running in this process; sim2real starts or joins its own")
        environment = _local_runtime_env() if address is None else {}
        changed = [*environment, "RAY_AUTH_MODE"] if address is None else []  # Ray sets the mode itself
        self._saved = {key: os.environ.get(key) for key in changed}  # restored by close()
        init: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING,
                                "log_to_driver": False,
                                "runtime_env": {"worker_process_setup_hook": f"{__name__}.warm_worker"}}
        if say is not None:
            say(f"starting a local Ray runtime of {workers} CPU(s) on loopback (its workers load the engine once)"
                if address is None else f"joining the Ray cluster at {address}")
        try:
            if address is None:
                os.environ.update(environment)  # the driver keeps using the token while it runs
                ray.init(address="local", num_cpus=workers, **init)
            else:
                check_reachable(address)
                ray.init(address=address, **init)
        except Sim2RealError:
            self._restore_environment()
            raise
        except Exception as err:  # ConnectionError, version mismatch, bad address: all user-facing
            self._restore_environment()
            where = "start a local Ray runtime" if address is None else f"join the Ray cluster at '{address}'"
            hint = "" if address is None else f"; {AUTH_HINT}"
            raise Sim2RealError(f"cannot {where}: {' '.join(str(err).split())[:300]}{hint}") from None
        self._ray = ray
        self.cpus = max(1, int(ray.cluster_resources().get("CPU", workers)))
        self.parallelism = self.cpus
        self.label = (f"Ray, local runtime of {self.cpus} CPU(s)" if address is None
                      else f"Ray cluster at {address} ({self.cpus} CPU(s))")
        self._remotes: dict[Callable[..., Any], Any] = {}

    def share(self, value: T) -> RayShared:
        """Put ``value`` into the object store once."""
        return RayShared(self._ray.put(value))

    def _remote(self, fn: Callable[[T], R]) -> Any:
        remote = self._remotes.get(fn)
        if remote is None:
            remote = self._remotes[fn] = self._ray.remote(max_retries=MAX_RETRIES)(fn)
        return remote

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn(item)`` for each item as Ray tasks, in the items' order.

        Raises
        ------
        WorkerDiedError
            A task's worker died more than :data:`MAX_RETRIES` times, or the cluster was lost.
        """
        exceptions = self._ray.exceptions
        remote = self._remote(fn)
        pending: deque[Any] = deque()

        def take() -> R:
            try:
                return self._ray.get(pending.popleft())
            except (exceptions.WorkerCrashedError, exceptions.NodeDiedError, exceptions.ObjectLostError,
                    exceptions.RaySystemError) as err:
                raise WorkerDiedError(f"a Ray task failed {MAX_RETRIES + 1} times ({type(err).__name__}: "
                                      f"{' '.join(str(err).split())[:200]}); the results written so far are "
                                      "kept") from None

        try:
            for item in items:
                pending.append(remote.remote(item))
                if len(pending) >= IN_FLIGHT_PER_WORKER * self.cpus:
                    yield take()
            while pending:
                yield take()
        except BaseException:
            for ref in pending:
                self._ray.cancel(ref, force=True)
            raise

    def _restore_environment(self) -> None:
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved = {}

    def close(self) -> None:
        """Leave the cluster, or stop the local runtime (idempotent)."""
        if self._ray.is_initialized():
            self._ray.shutdown()
        self._restore_environment()
