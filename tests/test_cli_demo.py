"""``sim2real demo`` end to end at reduced size (two start distances).

The whole loop without hardware: the reality stand-in (emulated xArm through the real SDK on
loopback, hidden-parameter world, mocap noise) and the nominal mirrored sim record two trials,
the fit runs on them, the trials are re-simulated with the fitted parameters and the report
compares before and after. The fit must shrink the mean sim-vs-real final-distance gap.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sim2real.params import load_params
from sim2real.trials import read_run

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_demo_two_distances(tmp_path):
    out = tmp_path / "demo"
    suffix = 40 + os.getpid() % 10
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_DOMAIN_ID": str(suffix),
           "ROS_LOG_DIR": str(tmp_path / "ros_log")}
    result = subprocess.run(
        [sys.executable, "-m", "sim2real", "demo", "--out", str(out), "--distances", "0.30,0.45",
         "--standin-host", f"127.0.0.{suffix}"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for step in ("[1/4]", "[2/4]", "[3/4]", "[4/4]"):
        assert step in result.stdout

    before, after = read_run(out / "standin_nominal"), read_run(out / "resim_fitted")
    assert len(before) == len(after) == 2
    assert all(record.complete for record in before)
    assert all({"real", "sim"} <= set(record.platforms) for record in before)
    fitted = load_params(out / "fit" / "fitted.yaml")
    assert fitted["arm.servo_tau"] != load_params(ROOT / "config" / "params.yaml")["arm.servo_tau"]
    assert (out / "fit" / "fitted.json").is_file()

    gaps = re.search(r"final-distance gap: ([\d.]+) cm before the fit, ([\d.]+) cm after", result.stdout)
    assert gaps, result.stdout[-2000:]
    assert float(gaps.group(2)) < float(gaps.group(1))
    html = (out / "report" / "report.html").read_text()
    assert "smaller" in html and "after fit" in html
    assert f"report: {out / 'report' / 'report.html'}" in result.stdout
