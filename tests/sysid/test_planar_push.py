"""Known-truth planar pushing: a rod pushes thin flat plates; the fit from the recorded pusher finds the
table friction, the pusher friction and the support's friction moment arm, and predicts held-out pushes.

The recordings (``tests/fixtures/planar_pushes.py``) are simulated with hidden values and carry
motion-capture noise (0.3 mm, 0.3° per sample). Measured over noise seeds 0-9 (this test uses seed 0):
every fit converged (exit 0) within 2 % of the truth for all three parameters (largest errors 0.8 %,
1.9 %, 1.8 %), and the held-out final position error fell from about 10 mm to 0.5-1 mm, the yaw error
from 8.5-9° to below 1°.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures import planar_pushes as pushes

from sim2real.cli import main

FREE = "contact.mu_table,contact.mu_pusher,contact.support_ratio"


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    truth = pushes.params(pushes.TRUTH)
    root = tmp_path_factory.mktemp("planar")
    train = pushes.write_pushes(root / "train", pushes.TRAINING, truth, noise_m=3e-4, noise_rad=5e-3, seed=0)
    held = pushes.write_pushes(root / "held", pushes.HELD_OUT, truth, noise_m=3e-4, noise_rad=5e-3, seed=100)
    return train, held


def _geometry() -> list[str]:
    return [f"--set={name}={value}" for name, value in pushes.GEOMETRY.items()]


@pytest.mark.slow
def test_the_fit_from_the_recorded_rod_recovers_both_frictions_and_the_support_ratio(
        recordings: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train, held = recordings
    out = tmp_path / "plate.yaml"
    code = main(["fit", str(train), *_geometry(), "--free", FREE, "--pusher-shape", "rod", "--horizon", "trial",
                 "--max-iterations", "40", "--validate", str(held), "--out", str(out)])
    report = json.loads(out.with_suffix(".json").read_text())
    assert code == 0, report["problems"]
    assert report["status"] == "converged" and report["dropped_rows"] == 0
    for name, true in pushes.TRUTH.items():
        assert report["values"][name] == pytest.approx(true, rel=0.05), name
    start = report["start_values"]
    assert start["contact.support_ratio"] == 1.0  # from the nominal values: all support at the corners
    # Held-out pushes: predicted within a few mm and degrees after the fit, clearly better than nominal.
    validation = report["validation"]["prediction"]["validation"]
    before, after = validation["start"], validation["final"]
    assert after["final_position_m"] < 2e-3 and after["yaw_deg"] < 1.5, after
    assert before["final_position_m"] > 5e-3 and before["yaw_deg"] > 5.0, before
    err = capsys.readouterr().err
    assert "contact.support_ratio = " in err and "validation (3 trials)" in err


@pytest.mark.slow
def test_fixing_the_support_at_the_corners_leaves_the_held_out_yaw_wrong(
        recordings: tuple[Path, Path], tmp_path: Path) -> None:
    """The issue's finding, reproduced: with all support at the corners (the old engine), fitting the two
    friction coefficients alone cannot make the blocks turn as they did."""
    train, held = recordings
    out = tmp_path / "corners.yaml"
    main(["fit", str(train), *_geometry(), "--free", "contact.mu_table,contact.mu_pusher", "--pusher-shape", "rod",
          "--horizon", "trial", "--max-iterations", "40", "--validate", str(held), "--out", str(out)])
    after = json.loads(out.with_suffix(".json").read_text())["validation"]["prediction"]["validation"]["final"]
    assert after["yaw_deg"] > 3.0, after  # measured 5.5 deg (8.5 at nominal); 0.3 deg with the support ratio free
