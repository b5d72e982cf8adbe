"""A trial's own push in its trial.json (``push``, what the recorder writes for each trial of a run):
:attr:`TrialMeta.push` reads it, :func:`check_trial_meta` refuses one that is not a mapping of numbers."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from fixtures.synthetic_trials import make_trial

from sim2real.errors import DataError
from sim2real.trials import read_trial, write_trial
from sim2real.trials.meta import TrialMeta, check_trial_meta

PUSH = {"height": 0.15, "lateral": 0.03, "start_x": 0.2, "end_x": 0.36, "speed": 0.3, "ramp_time": 0.2,
        "pre_time": 0.1, "settle_time": 0.5, "rate_hz": 100.0}


def test_the_trial_s_push_reads_back_from_its_trial_json(tmp_path: Path) -> None:
    record = make_trial(1, 0.30, duration=0.5, rate_hz=50.0)
    path = write_trial(tmp_path, replace(record, meta={**record.meta, "push": PUSH}))
    read = read_trial(path)
    assert TrialMeta(read.meta).push == PUSH
    assert json.loads((path / "trial.json").read_text())["push"] == PUSH
    assert TrialMeta(make_trial(0, 0.30).meta).push is None  # none written (an import, a replay, an older run)


@pytest.mark.parametrize(("push", "message"), [
    ([0.15, 0.03], "push must be a mapping of push keys to numbers, got list"),
    ({**PUSH, "end_x": "0.36"}, "push.end_x must be a number, got '0.36'"),
    ({**PUSH, "lateral": True}, "push.lateral must be a number, got True"),
])
def test_a_push_that_is_not_a_mapping_of_numbers_is_refused(tmp_path: Path, push: object, message: str) -> None:
    where = tmp_path / "trial.json"
    with pytest.raises(DataError, match=f"^{where}: {message}$"):
        check_trial_meta({"trial": "t", "push": push}, where)
    assert TrialMeta({"push": push}).push is None  # the view reads what the check refuses as absent
