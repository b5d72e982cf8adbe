"""``xarm_node`` against the loopback emulator: the end of a run (SIGINT) is a planned stop.

Every experiment ends by sending the node processes SIGINT; the arm is then stopped on purpose,
which the node must not report as a fault (no error line, nothing on ``real/fault``).
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from children import console_script, default_sigint
from loopback import start_emulator

from sim2real.nodes.runner import STANDIN_LINK
from sim2real.sim.servo import ServoParams

PORT = 5031
ROOT = Path(__file__).resolve().parents[2]
#: Guard against hanging (s), not a timing check: a node process starting ROS on a busy machine.
START_WITHIN = 120.0
#: A node must have exited this long after SIGINT (s), as ``test_every_node_stops_on_sigint`` allows.
EXIT_WITHIN = 15.0


def test_sigint_ends_the_node_as_a_planned_stop(ros_env: dict[str, str], tmp_path: Path) -> None:
    log_path = tmp_path / "xarm_node.log"
    link = [arg for name, value in STANDIN_LINK.items() for arg in ("-p", f"{name}:={value}")]
    with start_emulator(command_port=PORT, servo=ServoParams(tau=0.03, delay=0.01)) as emu, \
            open(log_path, "w") as log:
        node = subprocess.Popen([*console_script("xarm_node"), "--ros-args", "-p", f"robot_ip:={emu.config.host}",
                                 "-p", f"command_port:={PORT}", *link],
                                env={**ros_env, "PYTHONPATH": str(ROOT)}, cwd=tmp_path, stdout=log,
                                stderr=subprocess.STDOUT, preexec_fn=default_sigint)
        try:
            deadline = time.monotonic() + START_WITHIN
            served = 0
            while served < 50:  # the node's read loop is running
                assert node.poll() is None, log_path.read_text()[-3000:]
                assert time.monotonic() < deadline, "the node never started reading"
                time.sleep(0.1)
                served = emu.requests_served if "firmware" in log_path.read_text() else 0
            node.send_signal(signal.SIGINT)
            try:
                code = node.wait(timeout=EXIT_WITHIN)
            except subprocess.TimeoutExpired:
                pytest.fail(f"xarm_node still running {EXIT_WITHIN} s after SIGINT")
            snap = emu.snapshot()
        finally:
            if node.poll() is None:
                node.kill()
                node.wait()
    text = log_path.read_text()
    assert code == 0, text[-3000:]
    assert snap.state == 4 and snap.mode == 0 and np.max(np.abs(snap.v)) < 1e-3, snap
    assert "stopped as planned" in text, text[-3000:]
    assert "[ERROR]" not in text and "fault" not in text.lower() and "Traceback" not in text, text[-3000:]
