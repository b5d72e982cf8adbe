"""``sim2real emulate-xarm`` end to end: start it, drive it with the real SDK, stop it with Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from children import default_sigint
from loopback import REPORT_PORTS, free_host

from sim2real.hardware import DriverConfig, XArmDriver

ROOT = Path(__file__).resolve().parents[2]
PORT = 5023
#: A loopback address no other test process holds (two suites at once both bound 127.0.0.60 before).
HOST = free_host((PORT, *REPORT_PORTS))


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_emulate_xarm_serves_the_sdk_and_stops_on_sigint(tmp_path: Path) -> None:
    world = tmp_path / "world.yaml"
    world.write_text("arm:\n  servo_tau: 0.03\n  command_delay: 0.005\n"
                     "  initial_joints: [0.2, -0.3, -0.5, 0.0, 0.8, 0.1]\n", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "sim2real", "emulate-xarm", "--host", HOST, "--port", str(PORT),
                             "--world", str(world)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(), preexec_fn=default_sigint)
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert f"listening on {HOST}:{PORT}" in banner and "tau 0.03 s" in banner
        with XArmDriver(DriverConfig(ip=HOST, command_port=PORT)) as driver:
            q, _, _, _ = driver.read_joint_states()
            assert np.allclose(q, [0.2, -0.3, -0.5, 0.0, 0.8, 0.1], atol=1e-6)
            driver.start()
            for _ in range(30):
                driver.send_velocity(np.array([0.5, 0, 0, 0, 0, 0]), stamp=time.time())
                time.sleep(0.01)
            q_moved, _, _, _ = driver.read_joint_states()
        assert q_moved[0] > 0.25
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=5.0) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_emulate_xarm_bad_input_is_one_line_error(tmp_path: Path) -> None:
    cases = [
        ["--host", "192.168.1.10"],
        ["--host", HOST, "--port", str(PORT + 1), "--world", str(tmp_path / "missing.yaml")],
        ["--host", HOST, "--port", str(PORT + 1), "--latency", "-1"],
    ]
    for extra in cases:
        result = subprocess.run([sys.executable, "-m", "sim2real", "emulate-xarm", *extra], capture_output=True,
                                text=True, env=_env(), timeout=20)
        assert result.returncode == 2, result.stderr
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        # one line: "sim2real: error: ..." or, from the argument parser, "sim2real emulate-xarm: error: ..."
        assert len(lines) == 1 and lines[0].startswith("sim2real") and ": error:" in lines[0], result.stderr
