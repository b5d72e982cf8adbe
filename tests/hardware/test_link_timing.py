"""The kernel's arrival stamps (:func:`sim2real.hardware.link_timing.arrival_time`)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

from sim2real.hardware.link_timing import ARRIVAL_ANCILLARY_SIZE, arrival_time, stamp_arrivals


@contextmanager
def _tcp_pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A connected TCP pair on loopback (the stamps are TCP's, as on the xArm link)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        left = socket.create_connection(server.getsockname())
        right, _ = server.accept()
    with left, right:
        yield left, right


def _until_stamped(left: socket.socket, right: socket.socket, seconds: float = 5.0) -> None:
    """Wait until the kernel stamps what ``right`` receives. Linux turns receive stamps on for the whole system
    from a deferred work item after the first socket asks (``net_enable_timestamp``): beside CPU-bound work
    that worker may run tens of milliseconds later, and segments arriving before it carry no stamp."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left.sendall(b"p")
        _, ancillary, _, _ = right.recvmsg(64, ARRIVAL_ANCILLARY_SIZE)
        if arrival_time(ancillary) is not None:
            return
        time.sleep(0.01)
    raise AssertionError(f"no receive stamp within {seconds} s of asking for them")


def test_the_arrival_stamp_is_when_the_data_came_not_when_it_was_read() -> None:
    """Data read 50 ms after it was sent carries its arrival time, at least 50 ms before the read."""
    with _tcp_pair() as (left, right):
        assert stamp_arrivals(right)
        _until_stamped(left, right)
        sent = time.monotonic()
        left.sendall(b"request")
        time.sleep(0.05)
        data, ancillary, _, _ = right.recvmsg(64, ARRIVAL_ANCILLARY_SIZE)
        read = time.monotonic()
    arrived = arrival_time(ancillary)
    assert data == b"request"
    assert arrived is not None
    assert sent - 0.002 <= arrived <= read - 0.05 + 0.002


def test_no_stamp_without_the_option() -> None:
    with _tcp_pair() as (left, right):
        left.sendall(b"x")
        _, ancillary, _, _ = right.recvmsg(64, ARRIVAL_ANCILLARY_SIZE)
    assert arrival_time(ancillary) is None
