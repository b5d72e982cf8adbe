"""``sim2real replay`` end to end: replaying a simulated bag with its own parameters gives it back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim2real.cli import main
from sim2real.trials import read_run


@pytest.fixture(scope="module")
def bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("recorded") / "trial"
    assert main(["simulate", "--distance", "0.35", "--set", "contact.mu_table=0.4", "--out", str(path)]) == 0
    return path


@pytest.mark.parametrize("mode", ["commands", "kinematic"])
def test_replay_with_the_recording_parameters_reproduces_the_box(bag: Path, tmp_path: Path, mode: str) -> None:
    out = tmp_path / "replayed"
    assert main(["replay", str(bag), "--set", "contact.mu_table=0.4", "--mode", mode, "--out", str(out)]) == 0
    (trial,) = read_run(out)
    recorded, replayed = trial.platforms["real"].box_pose, trial.platforms["sim"].box_pose
    assert trial.meta["mirror"] == mode and trial.meta["params"]["contact.mu_table"] == 0.4
    np.testing.assert_allclose(replayed.t, recorded.t, atol=1e-6)
    np.testing.assert_allclose(replayed.position, recorded.position, atol=1e-6)


def test_replay_with_other_friction_differs_and_refuses_existing_output(bag: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "replayed"
    assert main(["replay", str(bag), "--set", "contact.mu_table=0.9", "--out", str(out)]) == 0
    (trial,) = read_run(out)
    gap = np.abs(trial.platforms["sim"].box_pose.position[-1] - trial.platforms["real"].box_pose.position[-1])
    assert gap.max() > 1e-3
    capsys.readouterr()
    assert main(["replay", str(bag), "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
