"""``simulate`` on a hard step: the trial finishes, says how its contact steps ended, saves the hard ones."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import yaml

from sim2real.cli import main
from sim2real.physics import HardStep, SolverSettings
from sim2real.physics import scenario as scenario_module
from sim2real.trials import read_trial

CORPUS = Path(__file__).parents[1] / "corpus" / "hard_steps"


def _scenario_from(case: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """A one-step scenario file and --set overrides reproducing a corpus step."""
    data = json.loads(case.read_text())
    state, pusher = data["state"], data["pusher"]
    dt = data["dt_s"]
    scenario = {
        "duration": dt, "dt": dt,
        "box": {"position": state["position_m"], "quaternion": state["quaternion_wxyz"],
                "linear_velocity": state["linear_velocity_m_s"], "angular_velocity": state["angular_velocity_rad_s"],
                "velocities": "step_before"},  # the engine state as saved, no half-step start
        "pusher": {"radius": data["params"]["pusher.radius"],
                   "waypoints": [[0.0, *pusher["start_m"]], [dt, *pusher["end_m"]]]},
    }
    path = tmp_path / f"{case.stem}.yaml"
    path.write_text(yaml.safe_dump(scenario))
    sets = [f"--set={name}={value!r}" for name, value in data["params"].items() if name != "pusher.radius"]
    return path, sets


@pytest.fixture(autouse=True)
def _every_contact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scenarios solve every contact, as the corpus steps were recorded (leaving the far ones out makes
    some of them easy)."""
    monkeypatch.setattr(scenario_module, "SolverSettings", functools.partial(SolverSettings, skip_band=0.0))


def test_recovered_step_is_counted_saved_and_exit_zero(tmp_path, capsys):
    scenario, sets = _scenario_from(CORPUS / "recontact_jitter_iterations.json", tmp_path)
    out = tmp_path / "run" / "trial_00_d0.400"
    assert main(["simulate", str(scenario), *sets, "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["solver"]["recovered"] == 1 and summary["solver"]["degraded"] == 0
    files = sorted((out / "hard_steps").glob("*.json"))
    assert len(files) == 1 and HardStep.load(files[0]).outcome == "recovered"
    record = read_trial(out)  # the extra folder does not disturb the bag
    assert record.meta["solver"]["sim"]["recovered"] == 1
    assert main(["resolve-step", str(files[0])]) == 0


def test_degraded_step_warns_first_and_exits_3(tmp_path, capsys):
    scenario, sets = _scenario_from(CORPUS / "recontact_jitter_tipping_best_iterate.json", tmp_path)
    saved = tmp_path / "hard"
    assert main(["simulate", str(scenario), *sets, "--save-hard-steps", str(saved)]) == 3
    captured = capsys.readouterr()
    assert captured.err.startswith("sim2real: warning: DEGRADED contact steps: 1 steps: 0 converged, 0 recovered, "
                                   "1 degraded")
    assert "contact solves      1 steps" in captured.out
    assert len(list(saved.glob("*.json"))) == 1
    # strict: one line naming the step, nothing written
    assert main(["simulate", str(scenario), *sets, "--strict", "--out", str(tmp_path / "strict")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sim2real: error: step 0: interior-point solver") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "strict").exists()
