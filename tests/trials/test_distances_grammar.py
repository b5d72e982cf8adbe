"""One --distances grammar: run, demo and the experiment node (trials.experiment) and sweep (its workspace, no
repeats) read the same text the same way, and refuse the same malformed text with the same words."""

from __future__ import annotations

import pytest

from sim2real.errors import Sim2RealError
from sim2real.sysid.prediction.sweep import parse_distances as sweep_distances
from sim2real.trials.experiment import parse_distances as run_distances


@pytest.mark.parametrize("text", ["0.30,0.45", " 0.30 , 0.45 ", "0.3,0.45"])
def test_both_read_the_same_numbers(text: str) -> None:
    assert run_distances(text) == sweep_distances(text) == (float(text.split(",")[0]), 0.45)


@pytest.mark.parametrize(("text", "words"), [("0.3,,0.4", "have an empty entry"), ("0.3,", "have an empty entry"),
                                             ("0.3,x", "must be comma-separated numbers in m"),
                                             ("", "names no start distance"), ("nan", "is outside")])
def test_both_refuse_malformed_text_in_the_same_words(text: str, words: str) -> None:
    for parse in (run_distances, sweep_distances):
        with pytest.raises(Sim2RealError, match=words):
            parse(text)


def test_the_ranges_and_repeats_differ_by_what_each_runs() -> None:
    assert run_distances("0.3,0.3") == (0.3, 0.3)  # a trial repeated at one distance
    with pytest.raises(Sim2RealError, match=r"0\.3 is given twice"):
        sweep_distances("0.3,0.3")  # the sweep's table is keyed by distance
    assert run_distances("0.9") == (0.9,)
    with pytest.raises(Sim2RealError, match=r"outside \[0.15, 0.7\] m"):
        sweep_distances("0.9")  # outside the standard push's workspace
