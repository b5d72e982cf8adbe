"""``sim2real fit`` end to end: a bag simulated with hidden servo and friction values is
fitted from nominal, the fitted YAML reproduces it, and bad input fails in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sim2real.cli import main
from sim2real.params import load_params
from sim2real.trials import read_trial

HIDDEN = {"arm.servo_tau": 0.065, "arm.command_delay": 0.011, "contact.mu_table": 0.35}


@pytest.fixture(scope="module")
def hidden_bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bag = tmp_path_factory.mktemp("hidden") / "trial"
    args = ["simulate", "--distance", "0.3", "--out", str(bag)]
    for name, value in HIDDEN.items():
        args += ["--set", f"{name}={value}"]
    assert main(args) == 0
    return bag


@pytest.mark.slow
def test_fit_recovers_hidden_values_and_the_yaml_reproduces_the_trial(hidden_bag: Path, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fitted.yaml"
    code = main(["fit", str(hidden_bag), "--free", ",".join(HIDDEN), "--out", str(out), "--max-iterations", "6",
                 "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    document = json.loads(captured.out)
    assert document == json.loads((tmp_path / "fitted.json").read_text())
    for key in ("values", "start_values", "std", "ci95", "correlation", "trace", "stop_reason", "warnings",
                "data", "versions"):
        assert key in document
    for name, value in HIDDEN.items():
        assert document["values"][name] == pytest.approx(value, rel=0.03)
        lo, hi = document["ci95"][name]
        assert lo <= document["values"][name] <= hi
    assert document["correlation"]["names"] == list(HIDDEN)
    assert document["data"]["trials"][0]["source"] == str(hidden_bag)
    assert "iteration" in captured.err
    fitted = load_params(out)
    assert fitted["arm.servo_tau"] == document["values"]["arm.servo_tau"]
    # Write-back round trip: simulate with the fitted file reproduces the fitted trial.
    again = tmp_path / "again"
    assert main(["simulate", "--distance", "0.3", "--params", str(out), "--out", str(again)]) == 0
    original = read_trial(hidden_bag).platforms["sim"].box_pose
    reproduced = read_trial(again).platforms["sim"].box_pose
    np.testing.assert_allclose(reproduced.position, original.position, atol=1e-4)


def _assert_one_line_error(code: int, err: str, out: Path) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sim2real: error:"), err
    assert not out.exists() and not out.with_suffix(".json").exists()


@pytest.mark.parametrize(("extra", "message"), [
    (["--free", "contact.mu_tabel"], "unknown parameter"),
    (["--free", "sim.dt"], "frozen"),
    (["--free", "contact.mu_table", "--bounds", "contact.mu_table=0.6:0.9"], "exclude its start"),
    (["--free", "contact.mu_table", "--horizon", "zero"], "--horizon"),
    (["--free", "pusher.offset"], "no simulator gradient"),
])
def test_bad_fit_arguments_fail_in_one_line_without_output(hidden_bag: Path, tmp_path: Path, extra: list[str],
                                                          message: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fitted.yaml"
    code = main(["fit", str(hidden_bag), "--out", str(out), *extra])
    err = capsys.readouterr().err
    _assert_one_line_error(code, err, out)
    assert message in err


def test_unreadable_truncated_or_topicless_bags_fail_in_one_line(hidden_bag: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fitted.yaml"
    truncated = tmp_path / "truncated"
    shutil.copytree(hidden_bag, truncated)
    mcap = next(truncated.glob("*.mcap"))
    mcap.write_bytes(mcap.read_bytes()[: mcap.stat().st_size // 3])
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "metadata.yaml").write_text("not: [a bag")
    topicless = tmp_path / "topicless"
    shutil.copytree(hidden_bag, topicless)
    for bag in (truncated, garbage, topicless, tmp_path / "missing"):
        extra = ["--platform", "real"] if bag == topicless else []
        code = main(["fit", str(bag), "--free", "contact.mu_table", "--out", str(out), *extra])
        _assert_one_line_error(code, capsys.readouterr().err, out)
