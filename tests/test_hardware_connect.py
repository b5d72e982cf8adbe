"""Bad configuration gives a one-line error within seconds; Ctrl-C leaves the arm stopped."""

from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from sim2real.errors import Sim2RealError
from sim2real.hardware import DriverConfig, EmulatorConfig, XArmDriver, XArmEmulator

PORT = 5022
_HOSTS = (f"127.0.0.{n}" for n in itertools.count(40))
ROOT = Path(__file__).resolve().parents[1]


def _connect_error(config: DriverConfig) -> tuple[str, float]:
    driver = XArmDriver(config)
    t0 = time.monotonic()
    with pytest.raises(Sim2RealError) as info:
        driver.connect()
    return str(info.value), time.monotonic() - t0


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A loopback server that accepts connections and never answers."""
    host = next(_HOSTS)
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, PORT))
    server.listen(4)
    server.settimeout(0.1)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except (TimeoutError, OSError):
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield host
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_unreachable_address_fails_fast() -> None:
    message, elapsed = _connect_error(DriverConfig(ip=next(_HOSTS), command_port=PORT))
    assert "connection refused" in message and "\n" not in message
    assert elapsed < 3.0


def test_silent_controller_fails_within_handshake_timeout(silent_server: str) -> None:
    message, elapsed = _connect_error(DriverConfig(ip=silent_server, command_port=PORT, handshake_timeout=1.0))
    assert "did not answer the version query within 1 s" in message and "\n" not in message
    assert elapsed < 3.0


@pytest.mark.parametrize(("version", "expected"), [
    ("", "unexpected firmware answer"),
    ("hello controller", "unexpected firmware answer"),
    ("7,7,XI1303000000,AC1303000000,v2.6.107", "7-axis arm"),
    ("6,6,XI1303000000,AC1303000000,v1.5.0", "needs >= v1.8.103"),
])
def test_wrong_firmware_answer_is_refused(version: str, expected: str) -> None:
    with XArmEmulator(EmulatorConfig(host=next(_HOSTS), command_port=PORT, version=version)) as emu:
        message, elapsed = _connect_error(DriverConfig(ip=emu.config.host, command_port=PORT))
    assert expected in message and "\n" not in message
    assert elapsed < 3.0


def test_config_rejects_non_ipv4_and_bad_mode() -> None:
    with pytest.raises(Sim2RealError, match="IPv4"):
        DriverConfig(ip="robot.local")
    with pytest.raises(Sim2RealError, match="mode"):
        DriverConfig(ip="127.0.0.1", mode=0)
    with pytest.raises(Sim2RealError, match="loopback"):
        EmulatorConfig(host="10.0.0.5")


_DRIVER_SCRIPT = """
import sys, time
import numpy as np
from sim2real.hardware import DriverConfig, XArmDriver
with XArmDriver(DriverConfig(ip=sys.argv[1], command_port=int(sys.argv[2]))) as driver:
    driver.start()
    print("streaming", flush=True)
    while True:
        driver.send_velocity(np.full(6, 0.3), stamp=time.time())
        driver.read_joint_states()
        time.sleep(0.01)
"""


def test_sigint_leaves_arm_stopped() -> None:
    with XArmEmulator(EmulatorConfig(host=next(_HOSTS), command_port=PORT)) as emu:
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        proc = subprocess.Popen([sys.executable, "-c", _DRIVER_SCRIPT, emu.config.host, str(PORT)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            deadline = time.monotonic() + 20.0
            assert proc.stdout is not None
            while "streaming" not in proc.stdout.readline():
                assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.3)
            assert np.max(np.abs(emu.joint_velocities())) > 0.2  # it was moving
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=10.0)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        deadline = time.monotonic() + 1.0  # the servo decelerates (tau 0.05 s) after the zero command
        while np.max(np.abs((snap := emu.snapshot()).v)) >= 1e-3 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert "KeyboardInterrupt" in (proc.stderr.read() if proc.stderr else "")
    assert np.max(np.abs(snap.v)) < 1e-3
    assert snap.mode == 0 and snap.state == 4 and snap.error_code == 0
    assert not list(Path("/tmp").glob("xarmcontroller_uds_*"))
