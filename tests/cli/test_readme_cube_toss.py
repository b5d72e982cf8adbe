"""The README's worked example of a prediction band (the real cube tosses) says what the command gives:
the figures quoted there are computed here from the same commands, so a change that moves them fails
until the README is updated."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from sim2real.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_commands() -> list[list[str]]:
    """The two cube-toss commands of the README's first look, as argument lists (continuations joined)."""
    block = README.read_text(encoding="utf-8").split("## A first look without the demo", 1)[1].split("```")[1]
    text = re.sub(r"\\\n\s*", " ", block)
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    wanted = [line for line in lines if line.startswith((".venv/bin/sim2real import cube-toss",
                                                          ".venv/bin/sim2real fit runs/tosses"))]
    assert len(wanted) == 2, lines
    return [shlex.split(line)[1:] for line in wanted]


@pytest.mark.slow  # 19 s: the README's fit of 25 tosses with its start-error ladder (make test, not make check)
def test_the_readme_cube_toss_band_figures_are_what_the_commands_give(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    imported, fit = _readme_commands()
    assert main(imported) == 0
    assert main(fit) == 3
    capsys.readouterr()
    document = json.loads((tmp_path / "cube.json").read_text())
    spread = document["validation"]["spread"]
    tau, cal = spread["calibration"]["discrepancy"], spread["calibration"]
    prediction = document["validation"]["prediction"]["validation"]
    yaw = (prediction["start"]["yaw_deg"], prediction["final"]["yaw_deg"])
    readme = " ".join(README.read_text(encoding="utf-8").split())
    modes = {t["trial"]: t["modes"] for t in spread["trials"] if len(t["modes"]) > 1}
    first = modes["toss_017"]
    error = spread["start_error"]
    quoted = [
        f"a further start error chosen on the held-out tosses ({error['position_mm']:g} mm and {error['yaw_deg']:g}°",
        f"a held-out yaw error that rose: {yaw[0]:.1f}° → {yaw[1]:.1f}°",
        f"{1e3 * tau['x_m']:.0f} mm in x, {1e3 * tau['y_m']:.0f} mm in y, {tau['yaw_deg']:.0f}° in yaw",
        f"(`q` = {cal['quantile']:.1f}, the 24th of {cal['trials']} scores)",
        f"The draws alone hold {spread['check']['parameter_inside']} of the 25 real final poses, the calibrated "
        f"90 % band {spread['check']['inside']}",
        "Two tosses have two modes" if len(modes) == 2 else f"{len(modes)} tosses have several modes",
        f"toss_017 ends turned {first[0]['yaw_deg']['centre']:.0f}° in {100 * first[0]['probability']:.0f} % of the "
        f"draws and {first[1]['yaw_deg']['centre']:.0f}° in {100 * first[1]['probability']:.0f} %",
    ]
    for text in quoted:
        assert text in readme, text
    assert len(document["problems"]) == 2
