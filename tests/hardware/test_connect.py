"""Bad configuration gives a one-line error, bounded in time; Ctrl-C leaves the arm stopped.

The vendor SDK alone retries an unanswered connection for minutes; the driver's bounds are
its handshake and connect timeouts. The tests check the reason given and that the driver gave
up (after at least the configured timeout where there is one); the upper bound they apply,
:data:`HANG_GUARD`, only tells "bounded" from "retries for minutes", so a busy machine does
not fail them.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from children import default_sigint
from loopback import free_host, refused_address, start_emulator

from sim2real.errors import Sim2RealError
from sim2real.hardware import DriverConfig, EmulatorConfig, XArmDriver

PORT = 5022
ROOT = Path(__file__).resolve().parents[2]
#: Seconds after which a connect attempt counts as hanging (the SDK alone retries for minutes).
HANG_GUARD = 60.0


def _connect_error(config: DriverConfig) -> tuple[str, float]:
    driver = XArmDriver(config)
    t0 = time.monotonic()
    with pytest.raises(Sim2RealError) as info:
        driver.connect()
    return str(info.value), time.monotonic() - t0


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A loopback server that accepts connections and never answers."""
    host = free_host((PORT,))
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
    host, port, holder = refused_address()
    with holder:
        message, elapsed = _connect_error(DriverConfig(ip=host, command_port=port))
    assert "connection refused" in message and "\n" not in message
    assert elapsed < HANG_GUARD


def test_silent_controller_fails_after_the_handshake_timeout(silent_server: str) -> None:
    message, elapsed = _connect_error(DriverConfig(ip=silent_server, command_port=PORT, handshake_timeout=1.0))
    assert "did not answer the version query within 1 s" in message and "\n" not in message
    assert 1.0 <= elapsed < HANG_GUARD  # it waited the handshake timeout, then gave up


@pytest.mark.parametrize(("version", "expected"), [
    ("", "unexpected firmware answer"),
    ("hello controller", "unexpected firmware answer"),
    ("7,7,XI1303000000,AC1303000000,v2.6.107", "7-axis arm"),
    ("6,6,XI1303000000,AC1303000000,v1.5.0", "needs >= v1.8.103"),
])
def test_wrong_firmware_answer_is_refused(version: str, expected: str) -> None:
    with start_emulator(command_port=PORT, version=version) as emu:
        message, elapsed = _connect_error(DriverConfig(ip=emu.config.host, command_port=PORT))
    assert expected in message and "\n" not in message
    assert elapsed < HANG_GUARD


def test_config_rejects_non_ipv4_and_bad_mode() -> None:
    with pytest.raises(Sim2RealError, match="IPv4"):
        DriverConfig(ip="robot.local")
    with pytest.raises(Sim2RealError, match="mode"):
        DriverConfig(ip="127.0.0.1", mode=0)
    with pytest.raises(Sim2RealError, match="loopback"):
        EmulatorConfig(host="10.0.0.5")


#: Streams 0.3 rad/s on every joint until interrupted. Its link limits are lenient so that a
#: busy machine cannot latch a latency fault before the interrupt this test is about.
_DRIVER_SCRIPT = """
import sys, time
import numpy as np
from sim2real.hardware import DriverConfig, XArmDriver
config = DriverConfig(ip=sys.argv[1], command_port=int(sys.argv[2]), max_round_trip=5.0, latency_budget=5.0)
with XArmDriver(config) as driver:
    driver.start()
    print("streaming", flush=True)
    while True:
        driver.send_velocity(np.full(6, 0.3), stamp=time.time())
        driver.read_joint_states()
        time.sleep(0.01)
"""


def _wait_for(condition: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_sigint_leaves_arm_stopped(tmp_path: Path) -> None:
    # The child's output goes to files: a pipe nobody reads fills up (the SDK and the driver's
    # warnings on a busy machine) and would block the child mid-shutdown.
    stdout_path, stderr_path = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with start_emulator(command_port=PORT) as emu, open(stdout_path, "w") as stdout, \
            open(stderr_path, "w") as stderr:
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        proc = subprocess.Popen([sys.executable, "-c", _DRIVER_SCRIPT, emu.config.host, str(PORT)],
                                stdout=stdout, stderr=stderr, text=True, env=env, preexec_fn=default_sigint)
        try:
            _wait_for(lambda: "streaming" in stdout_path.read_text() or proc.poll() is not None, HANG_GUARD,
                      "the driver never started streaming")
            assert proc.poll() is None, stderr_path.read_text()[-3000:]
            _wait_for(lambda: np.max(np.abs(emu.joint_velocities())) > 0.2, HANG_GUARD, "the arm never moved")
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=HANG_GUARD)
            except subprocess.TimeoutExpired:
                # Known cause: xarm-python-sdk's ``SocketPort.read`` wraps its reply wait in a
                # bare ``except:`` that swallows a KeyboardInterrupt landing there.
                pytest.fail("Ctrl-C did not stop the streaming program: the KeyboardInterrupt was lost "
                            "(swallowed inside an SDK reply wait?)")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        # The servo decelerates (tau 0.05 s) after the zero command; rest = still for 0.1 s.
        still_since: list[float] = []

        def at_rest() -> bool:
            if np.max(np.abs(emu.snapshot().v)) >= 1e-3:
                still_since.clear()
                return False
            still_since[:] = still_since or [time.monotonic()]
            return time.monotonic() - still_since[0] >= 0.1

        _wait_for(at_rest, HANG_GUARD, "the arm kept moving after Ctrl-C")
        snap = emu.snapshot()
    assert "KeyboardInterrupt" in stderr_path.read_text()
    assert np.max(np.abs(snap.v)) < 1e-3
    assert snap.mode == 0 and snap.state == 4 and snap.error_code == 0
    assert not list(Path("/tmp").glob("xarmcontroller_uds_*"))
