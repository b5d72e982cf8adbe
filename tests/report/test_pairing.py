"""Before/after in a report of several runs comes from labels and records, never from the order of the runs
(issue 29): runs of different blocks are shown side by side, a re-simulation is compared with the run whose
recordings it re-simulates, and --before/--after name the pair explicitly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.synthetic_trials import make_trial

from sim2real.cli import main
from sim2real.errors import Sim2RealError
from sim2real.report import build_report
from sim2real.report.pairing import pair_runs, replays
from sim2real.trials import TrialRecord, read_run, write_run_meta, write_trial

COMPARISON = "Mean sim-vs-real final position error in the table plane"


def _recorded(path: Path, real_travel: float, sim_travel: float) -> Path:
    """A recorded run (real and mirrored sim) of two standard pushes."""
    write_run_meta(path, {"mode": "standin", "mirror": "closed"})
    for index, distance in enumerate((0.30, 0.40)):
        write_trial(path, make_trial(index, distance, real_travel=real_travel, sim_travel=sim_travel,
                                     duration=1.0, rate_hz=50.0))
    return path


def _replay(path: Path, recorded: Path, sim_travel: float, params: dict[str, float]) -> Path:
    """The recorded run's trials re-simulated with ``params``: the recording kept, a new sim platform."""
    write_run_meta(path, {"mode": "replay", "sources": [str(recorded)]})
    for index, trial in enumerate(read_run(recorded)):
        distance = float(trial.meta["initial_distance_m"])
        sim = make_trial(index, distance, sim_travel=sim_travel, duration=1.0, rate_hz=50.0).platforms["sim"]
        kept = {k: v for k, v in trial.meta.items() if k not in ("outcomes", "topics", "written", "schema", "versions")}
        meta = {**kept, "mode": "replay", "replay_of": trial.name, "params": {**trial.meta["params"], **params}}
        write_trial(path, TrialRecord(trial.name, {"real": trial.platforms["real"], "sim": sim}, trial.reference, meta))
    return path


def test_runs_of_different_blocks_are_shown_side_by_side_without_a_before_after_claim(tmp_path: Path) -> None:
    """Three runs of three blocks (the same pushes, other real outcomes): the first and the last used to be
    compared as before and after."""
    runs = [_recorded(tmp_path / name, real, 0.10) for name, real in (("steel", 0.15), ("wood", 0.12),
                                                                     ("foam", 0.20))]
    paths = build_report(runs, tmp_path / "report", max_trial_figures=0)
    assert paths.pairs == ()
    md = paths.markdown.read_text()
    assert COMPARISON not in md and COMPARISON not in paths.text and " vs " not in md
    assert "## Runs side by side" in md
    why = ("Run(s) 'steel', 'wood', 'foam' are shown side by side without a before/after comparison: no other run "
           "re-simulates the same recordings")
    assert why in md and why in paths.text
    assert "| steel | 2 | 50.0 |" in md and "| foam | 2 | 100.0 |" in md  # each run's own mean final error (mm)


@pytest.mark.slow
def test_a_re_simulation_is_the_after_of_the_run_it_re_simulates_whatever_the_order(tmp_path: Path) -> None:
    recorded = _recorded(tmp_path / "recorded", 0.15, 0.10)
    fitted = _replay(tmp_path / "fitted", recorded, 0.145, {"contact.mu_table": 0.31})
    other_block = _recorded(tmp_path / "other_block", 0.12, 0.10)
    paths = build_report([fitted, other_block, recorded], tmp_path / "report", max_trial_figures=0)
    assert [(before, after) for before, after, _ in paths.pairs] == [("recorded", "fitted")]
    md = paths.markdown.read_text()
    assert f"{COMPARISON}: 50.0 mm ('recorded') → 5.0 mm ('fitted'), 45.0 mm smaller (-90 %)." in md
    assert ("'fitted' re-simulates the recordings of 'recorded' (trial.json replay_of; the same recorded box "
            "poses)") in md
    assert "Run(s) 'other_block' are shown side by side" in md
    # The same trial names with another block's recordings are not a re-simulation of them.
    assert not replays(read_run(fitted), read_run(other_block))


@pytest.mark.slow
def test_two_re_simulations_of_the_same_recordings_are_ordered_by_the_fit(tmp_path: Path) -> None:
    recorded = _recorded(tmp_path / "recorded", 0.15, 0.10)
    nominal = _replay(tmp_path / "nominal", recorded, 0.10, {"contact.mu_table": 0.5})
    fitted = _replay(tmp_path / "fitted", recorded, 0.145, {"contact.mu_table": 0.31})
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"values": {"contact.mu_table": 0.31}, "start_values": {"contact.mu_table": 0.5}}))
    paths = build_report([fitted, nominal], tmp_path / "report", fit=fit, max_trial_figures=0)
    assert [(before, after) for before, after, _ in paths.pairs] == [("nominal", "fitted")]
    assert "with the start values and 'fitted' with the fitted values of fit" in paths.pairs[0][2]
    # Without the fit nothing says which came first: side by side.
    unordered = build_report([fitted, nominal], tmp_path / "report2", max_trial_figures=0)
    assert unordered.pairs == () and COMPARISON not in unordered.markdown.read_text()


@pytest.mark.slow
def test_before_and_after_can_be_named_and_must_name_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    steel, wood = _recorded(tmp_path / "steel", 0.15, 0.10), _recorded(tmp_path / "wood", 0.12, 0.10)
    paths = build_report([steel, wood], tmp_path / "report", before="wood", after="steel", max_trial_figures=0)
    assert paths.pairs == (("wood", "steel", "named with --before and --after"),)
    assert f"{COMPARISON}: 20.0 mm ('wood') → 50.0 mm ('steel')" in paths.markdown.read_text()
    with pytest.raises(Sim2RealError, match="the run after 'glass' is not the label of a run") as err:
        pair_runs(["steel", "wood"], [[], []], before="steel", after="glass")
    assert err.value.option == "after"  # the CLI prefixes --after
    with pytest.raises(Sim2RealError, match="give both the run before and the run after") as err:
        pair_runs(["steel", "wood"], [[], []], before="steel")
    assert err.value.option == "after"
    out = tmp_path / "cli"
    assert main(["report", str(steel), str(wood), "--out", str(out), "--before", "steel", "--after", "wood",
                 "--max-trial-figures", "0"]) == 0
    assert f"{COMPARISON}: 50.0 mm ('steel') → 20.0 mm ('wood')" in capsys.readouterr().out
    bad = tmp_path / "bad"
    assert main(["report", str(steel), str(wood), "--out", str(bad), "--before", "steel", "--after", "steel"]) == 2
    err = capsys.readouterr().err
    assert "--after: the runs before and after are the same run 'steel'" in err and err.count("\n") == 1 \
        and not bad.exists()
