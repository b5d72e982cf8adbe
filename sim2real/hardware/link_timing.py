"""How the xArm driver times its link: the kernel's TCP statistics, the one gate every frame passes, and
this process's own CPU wait.

* :func:`tcp_times`: when data last left and arrived on a socket, stamped by the kernel (so a
  starved process neither hides a silent controller nor looks like one);
* :class:`SendGate`: the lowest send point of the command socket; once closed it refuses every frame
  that could move the arm, and it keeps the last request for the stall and round-trip judgements;
* :class:`RunQueueDelay`: how long given threads waited runnable for a CPU (a diagnostic);
* :func:`stamp_arrivals` and :func:`arrival_time`: the kernel's arrival stamp of received data (the
  emulator times its own replies with it).

Times are ``time.monotonic()`` seconds.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sim2real.hardware import protocol as wire

#: Transaction id of the driver's own stop frames; the SDK numbers its requests 1..65535 and skips
#: replies to any other id as stale.
STOP_TRANSACTION = 0


@dataclass(frozen=True)
class TcpTimes:
    """The kernel's view of a TCP connection (``TCP_INFO``): seconds since data was last sent and
    received (at the kernel tick's resolution), and bytes received so far."""

    sent_ago: float
    received_ago: float
    received_bytes: int


#: ``struct tcp_info`` (linux/tcp.h): tcpi_last_data_sent at byte 44, tcpi_last_data_recv at 52
#: (u32, ms), tcpi_bytes_received at 128 (u64, Linux >= 4.1).
_TCP_INFO_SIZE = 136


def tcp_times(sock: socket.socket | None) -> TcpTimes | None:
    """The kernel's timing of ``sock`` (see :class:`TcpTimes`); None where unavailable.

    The kernel stamps each segment as it leaves or arrives, whether or not this process runs,
    so these times measure the peer and the link, not this machine's CPU load.
    """
    if sock is None or not hasattr(socket, "TCP_INFO"):
        return None
    try:
        raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_SIZE)
    except (OSError, ValueError):
        return None
    if len(raw) < _TCP_INFO_SIZE:
        return None
    sent_ms, received_ms = struct.unpack_from("=I4xI", raw, 44)
    (received,) = struct.unpack_from("=Q", raw, 128)
    return TcpTimes(sent_ms * 1e-3, received_ms * 1e-3, int(received))


#: ``SO_TIMESTAMPNS`` / ``SCM_TIMESTAMPNS`` (asm-generic/socket.h; Python's ``socket`` does not name them).
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def stamp_arrivals(sock: socket.socket) -> bool:
    """Ask the kernel to stamp each segment ``sock`` receives (``SO_TIMESTAMPNS``); False where
    unsupported. Read the stamps with :func:`arrival_time` on what ``sock.recvmsg`` returns."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


#: Ancillary buffer for one ``struct timespec`` (two 64-bit fields).
ARRIVAL_ANCILLARY_SIZE = socket.CMSG_SPACE(16)


def arrival_time(ancillary: list[tuple[int, int, bytes]]) -> float | None:
    """When the kernel received the data of one ``recvmsg`` (``time.monotonic()`` s), from its
    ``SCM_TIMESTAMPNS`` stamp (wall-clock time, converted here); None without a stamp.

    The stamp is taken as the segment arrives, whether or not this process runs, so the time
    from it to a reply is how long this process took to answer, its waits for a CPU included.
    """
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(data) >= 16:
            seconds, nanoseconds = struct.unpack_from("=qq", data)
            return time.monotonic() - (time.time() - (seconds + nanoseconds * 1e-9))
    return None


@dataclass
class PendingRequest:
    """The last request written to the command socket (not a stop frame): when the socket had it
    (``written_at``, monotonic s, taken after the write: what stall and round-trip budgets count
    from), the socket's received-byte count just before (None if unknown), its register, when a
    reply byte was first seen (None: not yet), and when the write began (``leaving_at``: the request
    cannot reach the controller earlier, so a reply ``L`` s after its arrival comes at least ``L`` s
    after this; the controller's sample time of a read)."""

    written_at: float
    received_before: int | None
    register: int
    answered_at: float | None = None
    leaving_at: float | None = None


class SendGate:
    """The lowest send point of the command socket: every frame the SDK or the driver writes goes
    through :meth:`write` (installed over the SDK port's ``write``), under one lock.

    Once :meth:`close` has run, frames that could move the arm (:func:`protocol.cannot_move` is
    False) are refused there, checked immediately before the bytes would go to the socket; the
    SDK then sees a failed send (``ERR_NOTTCP``) at once. Also keeps the last request frame
    (:class:`PendingRequest`), overall and per writing thread, for the stall and round-trip judgements.
    """

    def __init__(self, port: Any, sock: socket.socket | None) -> None:
        self._port_write: Callable[[bytes], int] = port.write
        self._sock = sock
        self._lock = threading.Lock()
        self._closed = False
        self.request: PendingRequest | None = None
        self._by_thread: dict[int, PendingRequest] = {}
        port.write = self.write

    @property
    def closed(self) -> bool:
        """Whether motion frames are refused."""
        return self._closed

    def write(self, data: bytes) -> int:
        """Write ``data`` (whole request frames) unless it could move the arm after :meth:`close`;
        0 when written, -1 when refused or the SDK's write failed (as the SDK's port answers)."""
        frames = wire.request_frames(data)
        with self._lock:
            if self._closed and not all(wire.cannot_move(frame) for frame in frames):
                return -1
            before = tcp_times(self._sock)
            leaving_at = time.monotonic()
            code = self._port_write(data)
            written_at = time.monotonic()
            requests = [f for f in frames if f.transaction != STOP_TRANSACTION
                        and f.protocol != wire.PROTOCOL_HEARTBEAT]
            if code == 0 and requests:
                received = before.received_bytes if before else None
                self.request = PendingRequest(written_at, received, requests[-1].register, leaving_at=leaving_at)
                self._by_thread[threading.get_ident()] = self.request
            return int(code)

    def mine(self) -> PendingRequest | None:
        """The last request the calling thread wrote, or None."""
        return self._by_thread.get(threading.get_ident())

    def close(self, wait: float) -> float:
        """Refuse every frame that could move the arm from now on; returns the moment (monotonic
        s) after which none left (a write in progress finishes first; waited for up to ``wait``)."""
        acquired = self._lock.acquire(timeout=wait)
        try:
            self._closed = True
            return time.monotonic()
        finally:
            if acquired:
                self._lock.release()



class RunQueueDelay:
    """How long registered threads of this process were runnable but waiting for a CPU (s).

    Linux's per-thread scheduler statistics (``/proc/self/task/<tid>/schedstat``, second field,
    ns). A diagnostic (:attr:`DriverStatus.cpu_wait`): how starved the driver's own threads were,
    which the link judgements do not depend on. :meth:`of` returns None where the statistics are
    unavailable (another OS, a kernel without ``CONFIG_SCHED_INFO``, a thread that ended).
    """

    _MAX_OPEN = 16

    def __init__(self) -> None:
        self._fds: dict[int, int] = {}
        self._baseline: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._lock = threading.Lock()

    def of(self, tids: tuple[int, ...]) -> float | None:
        """Total run-queue delay of the threads ``tids`` so far (s), or None."""
        total = 0.0
        with self._lock:
            for tid in tids:
                value = self._read(tid)
                if value is None:
                    return None
                total += value
        return total

    def register(self, tid: int) -> None:
        """Count thread ``tid`` in :meth:`since_registered` from now on."""
        with self._lock:
            if tid not in self._baseline and len(self._baseline) < self._MAX_OPEN:
                value = self._read(tid)
                if value is not None:
                    self._baseline[tid] = self._last[tid] = value

    def since_registered(self) -> float | None:
        """Run-queue delay of the registered threads since each was registered (s), or None."""
        with self._lock:
            for tid in self._baseline:
                value = self._read(tid)
                if value is not None:
                    self._last[tid] = value
            if not self._baseline:
                return None
            return sum(self._last[tid] - self._baseline[tid] for tid in self._baseline)

    def _read(self, tid: int) -> float | None:
        fd = self._fds.get(tid)
        try:
            if fd is None:
                if len(self._fds) >= self._MAX_OPEN:
                    self._close_all()
                fd = self._fds[tid] = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
            return int(os.pread(fd, 128, 0).split()[1]) * 1e-9
        except (OSError, IndexError, ValueError):
            if fd is not None:
                self._fds.pop(tid, None)
                with contextlib.suppress(OSError):
                    os.close(fd)
            return None

    def _close_all(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()

    def close(self) -> None:
        with self._lock:
            self._close_all()
