"""report.html in a real browser: headless Chromium loads it without console errors, shows the
experiment table, decodes every figure, and the rendered page is not blank."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
from fixtures.synthetic_trials import make_trial

from sim2real.report import build_report
from sim2real.trials import write_run_meta, write_trial


def _chromium(chromium: str, tmp_path: Path, profile: str, *args: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / profile
    home.mkdir()
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
               f"--user-data-dir={home / 'profile'}", "--enable-logging=stderr", "--v=0", *args]
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home), "XDG_CACHE_HOME": str(home)}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


def test_report_renders_in_chromium(chromium: str, tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_run_meta(run, {"mode": "standin", "mirror": "closed"})
    write_trial(run, make_trial(0, 0.30, duration=1.0, rate_hz=50.0))
    write_trial(run, make_trial(1, 0.40, duration=1.0, rate_hz=50.0, sim_topple=False))
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"values": {"contact.mu_table": 0.4}, "trace": [{"cost": 2.0}, {"cost": 1.0}]}))
    paths = build_report([run], tmp_path / "report", fit=fit)
    url = paths.html.resolve().as_uri()

    dom = _chromium(chromium, tmp_path, "dom", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    assert console == []
    n_figures = len(paths.figures)
    assert n_figures == 2 * 3 + 2
    assert f'data-images-loaded="{n_figures}/{n_figures}"' in dom.stdout  # set by the page once images decode
    table = re.search(r'<table class="experiment">(.*?)</table>', dom.stdout, re.S)
    assert table is not None
    assert table.group(1).count("<tr>") == 1 + 2  # header + two trials
    # x distances (cm); final error xy, 3-D (the sim box did not topple: 5 cm higher), yaw, path RMS; flips
    assert "<td>trial_01_d0.400</td><td>40.0</td><td>55.0</td><td>54.0</td><td>1.0</td><td>10.0</td><td>51.0</td>" \
           "<td>0.0</td><td>31.2</td><td>yes</td><td>no</td><td>no</td>" in table.group(1)

    shot = tmp_path / "shot.png"
    screenshot = _chromium(chromium, tmp_path, "shot", f"--screenshot={shot}", "--window-size=1200,2400",
                           "--hide-scrollbars", url)
    assert screenshot.returncode == 0 and shot.is_file(), screenshot.stderr[-2000:]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.image as mpimg

    pixels = mpimg.imread(shot)[..., :3]
    assert pixels.shape[:2] == (2400, 1200)
    non_white = np.mean(np.any(pixels < 0.9, axis=-1))
    red = np.mean((pixels[..., 0] > 0.7) & (pixels[..., 1] < 0.3) & (pixels[..., 2] < 0.3))  # sim curves
    blue = np.mean((pixels[..., 2] > 0.6) & (pixels[..., 0] < 0.3))  # real curves
    assert non_white > 0.03 and red > 1e-4 and blue > 1e-4
