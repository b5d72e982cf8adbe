"""Files and directories sim2real writes follow the umask (0644 / 0755 under 022), not
mkstemp's 0600 or mkdtemp's 0700."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from fixtures.synthetic_trials import make_trial

from sim2real.filemodes import current_umask, staging_dir
from sim2real.params import ParameterSet, save_params
from sim2real.trials import write_run_meta, write_trial
from sim2real.trials.jsonio import write_json_atomic


@pytest.fixture(params=[0o022, 0o027, 0o002], ids=lambda m: f"umask{m:03o}")
def umask(request):
    previous = os.umask(request.param)
    yield request.param
    os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_current_umask_is_read_without_changing_it(umask: int) -> None:
    assert current_umask() == umask
    assert current_umask() == umask  # and it stayed


def test_outputs_follow_the_umask(tmp_path: Path, umask: int) -> None:
    file_mode, dir_mode = 0o666 & ~umask, 0o777 & ~umask
    run = tmp_path / "run"
    write_run_meta(run, {"mode": "standin"})
    trial = write_trial(run, make_trial(0, 0.30))
    params = save_params(tmp_path / "fit" / "fitted.yaml", ParameterSet.nominal())
    report = write_json_atomic(tmp_path / "fit" / "fitted.json", {"status": "ok"})
    stage = staging_dir(tmp_path, prefix=".report.", suffix=".partial")
    files = [run / "run.json", trial / "trial.json", trial / "metadata.yaml", trial / f"{trial.name}.mcap", params,
             report]
    assert {f.name: oct(_mode(f)) for f in files} == {f.name: oct(file_mode) for f in files}
    assert {d.name: oct(_mode(d)) for d in (run, trial, stage)} == {d.name: oct(dir_mode) for d in (run, trial, stage)}


@pytest.mark.slow
def test_fit_and_report_outputs_follow_the_umask(tmp_path: Path, umask: int) -> None:
    """The commands end to end: ``fit --out X.yaml`` (X.yaml, X.json) and ``report --out DIR`` (DIR and its files)."""
    from sim2real.cli import main

    file_mode, dir_mode = 0o666 & ~umask, 0o777 & ~umask
    run = tmp_path / "run"
    assert main(["simulate", "--distance", "0.35", "--set", "contact.mu_table=0.4", "--out", str(run / "a")]) == 0
    assert main(["simulate", "--distance", "0.45", "--set", "contact.mu_table=0.4", "--out", str(run / "b")]) == 0
    fitted = tmp_path / "fits" / "fitted.yaml"
    assert main(["fit", str(run / "a"), str(run / "b"), "--free", "contact.mu_table", "--starts", "1",
                 "--out", str(fitted)]) in (0, 3)
    recorded = tmp_path / "recorded"
    write_run_meta(recorded, {"mode": "standin"})
    write_trial(recorded, make_trial(0, 0.30))
    report = tmp_path / "report"
    assert main(["report", str(recorded), "--out", str(report)]) == 0
    files = [fitted, fitted.with_suffix(".json"), *sorted(report.iterdir())]
    assert {f.name: oct(_mode(f)) for f in files} == {f.name: oct(file_mode) for f in files}
    assert oct(_mode(report)) == oct(dir_mode)


def test_a_staged_file_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    from sim2real.filemodes import staged_file, write_text_atomic

    target = write_text_atomic(tmp_path / "out.json", "old\n")
    with pytest.raises(RuntimeError), staged_file(target) as handle:
        handle.write("half of the new")
        raise RuntimeError("failed late")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary file left
    with staged_file(target) as handle:
        handle.write("new\n")
        assert target.read_text() == "old\n"  # nothing visible before the block ends
    assert target.read_text() == "new\n"
