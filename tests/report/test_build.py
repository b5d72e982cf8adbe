"""Report sections on synthetic recorded fixtures: table arithmetic, inputs of each kind, fit section."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from fixtures.synthetic_trials import make_trial

from sim2real.errors import Sim2RealError
from sim2real.report import build_report, experiment_table, read_fit
from sim2real.trials import read_run, write_run_meta, write_trial

FIT = {
    "values": {"contact.mu_table": 0.42, "box.com_z": -0.01},
    "std": {"contact.mu_table": 0.01, "box.com_z": 0.002},
    "ci95": {"contact.mu_table": [0.40, 0.44], "box.com_z": [-0.014, -0.006]},
    "correlation": {"names": ["contact.mu_table", "box.com_z"], "matrix": [[1.0, -0.9], [-0.9, 1.0]]},
    "start_values": {"contact.mu_table": 0.35, "box.com_z": 0.0},
    "trace": [{"iteration": 0, "cost": 4.0}, {"iteration": 1, "cost": 0.5}, {"iteration": 2, "cost": 0.1}],
    "stop_reason": "relative cost change below 1e-8",
}


def _run(path: Path, specs: list[dict], mode: str = "standin") -> Path:
    write_run_meta(path, {"mode": mode, "mirror": "closed"})
    for i, spec in enumerate(specs):
        write_trial(path, make_trial(i, spec.pop("distance"), duration=1.0, rate_hz=50.0, **spec))
    return path


def _png_pixels(png: bytes) -> np.ndarray:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.image as mpimg

    return mpimg.imread(io.BytesIO(png), format="png")


def test_table_arithmetic(tmp_path: Path) -> None:
    run = _run(tmp_path / "run", [
        {"distance": 0.30, "real_travel": 0.17, "sim_travel": 0.15},                        # gap 2 cm, agree
        {"distance": 0.40, "real_travel": 0.10, "sim_travel": 0.16, "sim_topple": False},  # gap 6 cm, disagree
    ])
    table = experiment_table("run", read_run(run))
    assert [r.start_m for r in table.rows] == [0.30, 0.40]
    assert table.rows[0].real_final_m == pytest.approx(0.47) and table.rows[0].sim_final_m == pytest.approx(0.45)
    assert table.rows[0].agree is True and table.rows[1].agree is False
    assert table.mean_gap_m == pytest.approx(0.04) and table.max_gap_m == pytest.approx(0.06)
    assert table.flip_agreement == pytest.approx(0.5)


@pytest.mark.slow
def test_real_vs_sim_report_with_fit(tmp_path: Path) -> None:
    run = _run(tmp_path / "run", [{"distance": 0.30}, {"distance": 0.35, "sim_topple": False}])
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps(FIT))
    paths = build_report([run], tmp_path / "report", fit=fit)
    html = paths.html.read_text()
    md = paths.markdown.read_text()
    # self-contained: no external references, all figures inline
    assert not re.search(r"(src|href)=\"(?!data:)", html) and "http" not in html
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    # 3 per trial (box, joints, commands) + final distance + correlation + trace
    assert len(images) == 2 * 3 + 3 == len(paths.figures)
    for data in images:
        pixels = _png_pixels(base64.b64decode(data))
        assert pixels.shape[0] > 100 and np.std(pixels[..., :3]) > 0.05
    # experiment table values: x distances (cm), then final error xy and 3-D (mm), yaw (deg), path RMS (mm)
    assert ("<td>30.0</td><td>45.0</td><td>44.0</td><td>1.0</td><td>10.0</td><td>10.0</td><td>0.0</td><td>6.1</td>"
            "<td>yes</td><td>yes</td><td>yes</td>") in html
    # the second sim box did not topple: it ends 5 cm higher than the real one (3-D error √(1² + 5²) cm)
    assert ("Final position error over 2 trial(s): mean 10.0 mm, max 10.0 mm in the table plane (3-D: mean 30.5 mm, "
            "max 51.0 mm); yaw error mean 0.0°, max 0.0°; path RMS mean 18.6 mm, max 31.2 mm over 2 trial(s); flip "
            "agreement 50 % (1/2); x gap of the standard pushes mean 1.0 cm, max 1.0 cm over 2 trial(s).") in md
    # fit section: before/after, interval, correlations, trace
    assert "| contact.mu_table | - | 0.35 | 0.42 | +20.0 % | 0.01 | [0.4, 0.44] |" in md
    assert "contact.mu_table / box.com_z: -0.90" in md and "Cost 4 → 0.1 in 3" in md
    assert "relative cost change below 1e-8" in md
    assert "All recorded parameters are at their nominal values." in md
    for figure in paths.figures:
        assert figure.parent == paths.markdown.parent and f"]({figure.name})" in md
    assert "[run]" in paths.text and "flip agreement 50 %" in paths.text


@pytest.mark.slow
def test_real_only_and_sim_only_say_what_is_missing(tmp_path: Path) -> None:
    real = _run(tmp_path / "real", [{"distance": 0.30, "sim": False}])
    md = build_report([real], tmp_path / "r1").markdown.read_text()
    assert "Real recordings only" in md and "No sim-platform box poses" in md
    assert "Sim-vs-real errors: not available" in md and "Not recorded in this trial: sim platform." in md
    assert "No fit file given" in md
    sim = _run(tmp_path / "sim", [{"distance": 0.30, "real": False}])
    md = build_report([sim], tmp_path / "r2").markdown.read_text()
    assert "Simulated recordings only" in md and "No real-platform box poses" in md


@pytest.mark.slow
def test_before_vs_after(tmp_path: Path) -> None:
    before = _run(tmp_path / "before", [{"distance": 0.30, "sim_travel": 0.10}, {"distance": 0.40,
                                                                               "sim_travel": 0.12}])
    after = _run(tmp_path / "after", [{"distance": 0.30, "real": False, "sim_travel": 0.14},
                                      {"distance": 0.40, "real": False, "sim_travel": 0.16}])
    paths = build_report([before, after], tmp_path / "report", labels=["before", "after"], max_trial_figures=1)
    before_table, after_table = paths.tables
    assert before_table.mean_gap_m == pytest.approx(0.04)
    assert after_table.mean_gap_m == pytest.approx(0.01)  # real outcomes borrowed from 'before'
    md = paths.markdown.read_text()
    assert after_table.mean_final_error_xy_m == pytest.approx(0.01)
    assert ("Mean sim-vs-real final position error in the table plane: 40.0 mm ('before') → 10.0 mm ('after'), "
            "30.0 mm smaller (-75 %). Mean x gap of the standard pushes: 4.0 cm → 1.0 cm.") in md
    assert "taken from run 'before'" in md
    assert "Figures are shown for the first 1 of 2 trials of run 'after'" in md
    # per run: final error xy (mm), yaw error (deg), path RMS (mm), x gap (cm), agree
    assert "| trial_00_d0.300 | 30.0 | 45.0 | 50.0 | 0.0 | 30.6 | 5.0 | yes | 10.0 | 0.0 | 6.1 | 1.0 | yes |" in md


def test_bad_inputs_write_nothing(tmp_path: Path) -> None:
    run = _run(tmp_path / "run", [{"distance": 0.30}])
    out = tmp_path / "out"
    with pytest.raises(Sim2RealError, match="does not exist"):
        build_report([tmp_path / "missing"], out)
    with pytest.raises(Sim2RealError, match="2 label"):
        build_report([run], out, labels=["a", "b"])
    bad_fit = tmp_path / "fit.json"
    bad_fit.write_text(json.dumps({"std": {}}))
    with pytest.raises(Sim2RealError, match="no 'values'"):
        build_report([run], out, fit=bad_fit)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.json", "run"]


def test_fit_read_tolerantly(tmp_path: Path) -> None:
    path = tmp_path / "fit.json"
    path.write_text(json.dumps({"values": {"contact.mu_table": 0.4}, "trace": "bad", "warnings": ["mass: no"]}))
    fit = read_fit(path)
    assert fit.values == {"contact.mu_table": 0.4}
    assert set(fit.missing) == {"std", "start_values", "ci95", "correlation", "trace"}
    assert fit.warnings == ("mass: no",)


@pytest.mark.slow
def test_trials_of_several_objects_are_grouped_by_object(tmp_path: Path) -> None:
    """Trials labelled with their object (import --object) get a per-object table of the sim-vs-real errors;
    a run of one object (or unlabelled trials) gets none."""
    run = tmp_path / "blocks"
    write_run_meta(run, {"mode": "import"})
    for k, (name, sim_travel) in enumerate((("steel", 0.14), ("steel", 0.145), ("plastic", 0.10))):
        trial = make_trial(k, 0.30 + 0.05 * k, sim_travel=sim_travel, duration=0.5, rate_hz=50.0)
        trial.meta["object"] = {"name": name, "pusher_shape": "rod", "parameters": {"box.size_x": 0.1}}
        write_trial(run, trial)
    table = experiment_table("blocks", read_run(run))
    assert [r.obj for r in table.rows] == ["steel", "steel", "plastic"]
    md = build_report([run], tmp_path / "report").markdown.read_text()
    assert "By object" in md
    rows = {line.split("|")[2].strip(): line for line in md.splitlines()
            if line.startswith("| blocks |") and line.split("|")[2].strip() in ("steel", "plastic")}
    assert set(rows) == {"steel", "plastic"} and "| 2/2 |" in rows["steel"] and "| 1/1 |" in rows["plastic"]
    single = tmp_path / "single"
    write_run_meta(single, {"mode": "import"})
    write_trial(single, make_trial(0, 0.30, duration=0.5, rate_hz=50.0))
    assert "By object" not in build_report([single], tmp_path / "report1").markdown.read_text()
