"""A bistable scene (issue 55): a flat block pushed 0.8 m on a line 0.15 mm beside its centre of mass turns
left or right until the probe leaves it, as a hidden sub-millimetre offset of the contact decides. The
spread ``replay --spread`` predicts from a fit around the truth, with the hidden offset's distribution as
its start noise, must report the two turns as two modes with the probabilities the realities show, and
each reality's nearest mode must turn its way. The fixture's short push (0.12 m), whose turn grows
smoothly with the offset, must stay one mode.

Twenty realities here; ``python -m benchmarks.band_modes`` runs fifty and more scenes (figures in
docs/fitting.md, "Prediction bands on known truth with model error").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import band_modes

REALITIES = 20


@pytest.mark.slow
def test_a_bistable_push_is_predicted_as_two_modes_with_the_realities_odds(tmp_path: Path) -> None:
    realities = [band_modes.reality(0.8, k) for k in range(REALITIES)]
    entry, _ = band_modes.predict(tmp_path / "long", 0.8, 100, 0, 1)
    figures = band_modes.scene(entry, realities, 0.8, 100)
    modes = figures["modes"]
    assert len(modes) == 2, figures.get("why_one_mode")
    assert sorted(round(m["centre"][2] / abs(m["centre"][2])) for m in modes) == [-1, 1]  # one turns each way
    assert all(abs(m["centre"][2]) > 60 for m in modes), modes  # until the probe leaves the block
    assert 0.05 < figures["realities_left"] < 0.95, figures["realities_left"]  # both turns happen
    assert figures["difference_pp"] <= 100 * band_modes.TOLERANCE, figures
    assert figures["nearest_mode_same_turn"] >= REALITIES - 1, figures["nearest_mode"]
    assert figures["median_log_score"] > figures["median_log_score_one_normal"], figures


@pytest.mark.slow
def test_a_short_push_whose_turn_grows_with_the_offset_stays_one_mode(tmp_path: Path) -> None:
    realities = [band_modes.reality(0.12, k) for k in range(5)]
    entry, _ = band_modes.predict(tmp_path / "short", 0.12, 30, 0, 1)
    figures = band_modes.scene(entry, realities, 0.12, 30)
    assert len(figures["modes"]) == 1, figures["modes"]
    assert 0.1 < figures["predicted_left_draws"] < 0.9  # it turns either way, but not in two clusters
