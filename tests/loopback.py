"""Loopback addresses for test servers that no other process on this machine holds.

Several test runs may share one machine (two developers, CI jobs, a benchmark). An xArm
controller emulator must listen on the SDK's fixed report ports 30001-30003, so two runs that
pick the same ``127.0.0.N`` collide: the second cannot bind, or — worse — its driver talks to
the first run's emulator. These helpers take an address whose ports are free, and
:func:`start_emulator` retries when another process wins the race for one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.hardware import EmulatorConfig, XArmEmulator
from sim2real.hardware import protocol as wire

#: Report ports every emulator listens on (fixed by the vendor SDK).
REPORT_PORTS: tuple[int, ...] = (30001, 30002, 30003)
#: Host numbers N of 127.0.0.N tried, in order. Fixed-address tests elsewhere use 20-99.
HOST_NUMBERS: range = range(150, 255)


#: Lock files of the host numbers, one per number: the process that holds one keeps it until it exits.
HOST_LOCKS = Path(tempfile.gettempdir()) / "sim2real-loopback-hosts"
#: Host number -> open lock file descriptor, for the numbers this process holds.
_HELD: dict[int, int] = {}


def _hold(number: int) -> bool:
    """Whether this process holds (or now takes) the lock of host number ``number``: no other test process
    on this machine is handed ``127.0.0.N`` while it runs."""
    if number in _HELD:
        return True
    HOST_LOCKS.mkdir(exist_ok=True)
    fd = os.open(HOST_LOCKS / f"{number}.lock", os.O_CREAT | os.O_RDWR, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    _HELD[number] = fd
    return True


def _bindable(host: str, ports: Iterable[int]) -> bool:
    """Whether every TCP port in ``ports`` can be bound on ``host`` right now."""
    sockets: list[socket.socket] = []
    try:
        for port in ports:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        for sock in sockets:
            sock.close()


def free_host(ports: Iterable[int] = REPORT_PORTS, numbers: Iterable[int] = HOST_NUMBERS) -> str:
    """A ``127.0.0.N`` on which every port in ``ports`` is free now and that no other test process holds:
    the first such of ``numbers`` from a place that depends on this process's id, wrapping around. This
    process keeps the address's lock until it exits.

    Raises
    ------
    RuntimeError
        If every candidate address is taken.
    """
    wanted = tuple(ports)
    numbers = list(numbers)
    # Start at a place of this process's own, and skip addresses another process holds the lock of: two
    # suites that ask at the same moment (two clones tested at once) would otherwise both find the first
    # address free, and the later bind fails (seen: a demo's stand-in, three attempts).
    start = os.getpid() % len(numbers) if numbers else 0
    for number in numbers[start:] + numbers[:start]:
        host = f"127.0.0.{number}"
        if _hold(number) and _bindable(host, wanted):
            return host
    raise RuntimeError(f"no free loopback address for ports {wanted}")


@contextlib.contextmanager
def start_emulator(**config: Any) -> Iterator[XArmEmulator]:
    """A started :class:`XArmEmulator` (``EmulatorConfig(**config)`` on a free host), stopped on exit.

    ``config`` must not name ``host``; ``on_tick`` and ``on_request`` are the emulator's hooks.
    Another process may bind the chosen address between the check and the emulator's own bind;
    the next free address is tried then.
    """
    hooks = {name: config.pop(name) for name in ("on_tick", "on_request") if name in config}
    port = int(config.get("command_port", EmulatorConfig.command_port))
    numbers = list(HOST_NUMBERS)
    while numbers:
        host = free_host((port, *REPORT_PORTS), numbers)
        numbers.remove(int(host.rsplit(".", 1)[1]))  # taken by another process meanwhile: not again
        emulator = XArmEmulator(EmulatorConfig(host=host, **config), **hooks)
        try:
            emulator.start()
        except Sim2RealError as err:
            if "cannot listen" in str(err):
                continue
            raise
        try:
            yield emulator
        finally:
            emulator.stop()
        return
    raise RuntimeError("no free loopback address for an xArm emulator")


def refused_address() -> tuple[str, int, socket.socket]:
    """``(host, port, sock)``: an address nothing listens on, kept so by ``sock`` (bound, not
    listening) until the caller closes it; connecting there is refused."""
    for number in HOST_NUMBERS:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((f"127.0.0.{number}", 0))
        except OSError:
            sock.close()
            continue
        host, port = sock.getsockname()
        return host, port, sock
    raise RuntimeError("no loopback address to bind")


@dataclass
class RequestLog:
    """Every request the emulator executed: (time, register, params); and every change of the
    velocity it commanded: (time, largest joint speed). Pass it as ``on_request`` and its
    :meth:`on_command` as the emulator's ``on_command``."""

    entries: list[tuple[float, int, bytes]] = field(default_factory=list)
    commands: list[tuple[float, float]] = field(default_factory=list)

    def __call__(self, t: float, register: int, params: bytes) -> None:
        self.entries.append((t, register, params))

    def on_command(self, t: float, command: np.ndarray) -> None:
        self.commands.append((t, float(np.max(np.abs(command)))))

    def wait_for_quiet(self, deadline: float, quiet: float = 0.3) -> None:
        """Wait until the emulator executed no request for ``quiet`` s (or until ``deadline``): a queued stop
        (set_state 4, set_mode 0, set_state 4) passes through state 5 between its set_mode and its last
        set_state, so a snapshot taken at its first state 4 can see 5 next."""
        count, since = len(self.entries), time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - since < quiet:
            time.sleep(0.01)
            if len(self.entries) != count:
                count, since = len(self.entries), time.monotonic()


def moves(register: int, params: bytes) -> bool:
    """Whether a request commands motion (a nonzero joint velocity or a servo target)."""
    return register == wire.Register.MOVE_SERVOJ or (
        register == wire.Register.VC_SET_JOINTV and bool(np.any(wire.unpack_floats(params, 6))))
