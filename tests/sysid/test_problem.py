"""FitProblem: what a fit fits; its trial jackknife leaves one trial (and its source) out."""

from __future__ import annotations

import dataclasses

import pytest
from fixtures.pushed_box import NOMINAL

from sim2real.errors import InputError
from sim2real.sysid import FitProblem, FreeParameters, ResidualSpec
from sim2real.trials import TrialRecord


def _problem() -> FitProblem:
    records = [TrialRecord(f"t{k}", {}, None, {}) for k in range(3)]
    return FitProblem(records, NOMINAL, "contact.mu_table,box.size_x=box.size_y", spec=ResidualSpec(horizon=5),
                      sources=["a", "b", "c"])


def test_without_leaves_one_trial_and_its_source_out_and_keeps_the_rest() -> None:
    problem = _problem()
    smaller = problem.without("t1")
    assert [r.name for r in smaller.records] == ["t0", "t2"] and list(smaller.sources) == ["a", "c"]
    assert smaller.spec == problem.spec and smaller.start is problem.start and smaller.free == problem.free
    assert [r.name for r in problem.records] == ["t0", "t1", "t2"]  # the problem itself is unchanged
    assert [r.name for r in problem.only(["t2", "t0"]).records] == ["t0", "t2"]
    assert problem.without(1) == smaller  # by position: trials of different runs may share a name


def test_a_repeated_name_is_left_out_by_position_only() -> None:
    problem = dataclasses.replace(_problem(), records=[TrialRecord(n, {}, None, {}) for n in ("a", "b", "a")])
    with pytest.raises(InputError, match="2 trials are named 'a'"):
        problem.without("a")
    assert [(r.name, s) for r, s in zip(problem.without(2).records, problem.without(2).sources, strict=True)] == \
        [("a", "a"), ("b", "b")]


def test_the_free_set_is_parsed_once_with_its_ties() -> None:
    assert _problem().free_set == FreeParameters((("contact.mu_table",), ("box.size_x", "box.size_y")))


@pytest.mark.parametrize("change, message", [
    ({"sources": ["a"]}, "sources: 1 path(s) for 3 trial(s)"),
    ({"validation": [TrialRecord("h", {}, None, {})], "validation_sources": []},
     "validation_sources: 0 path(s) for 1 trial(s)"),
])
def test_sources_must_match_their_trials(change: dict, message: str) -> None:
    problem = _problem()
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        FitProblem(problem.records, NOMINAL, "contact.mu_table", **change)


def test_leaving_out_an_unknown_trial_is_an_error() -> None:
    with pytest.raises(InputError, match="no trial 'x' in this fit"):
        _problem().without("x")
    with pytest.raises(InputError, match="no trial 3 in this fit of 3"):
        _problem().without(3)
