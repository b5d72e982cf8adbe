"""Known truth, repeated: do the fit's 95 % intervals contain the hidden values?

Twenty seeds, each drawing hidden servo and box values; the simulated arm makes six probe pushes
with them, recorded with white noise on the joint states and the box poses and jittered sample
stamps (``benchmarks.coverage``, problem ``arm``). The demo's two stages fit them: the servo from
joint segments, then the box's frictions and centre-of-mass height from whole trials of the
simulated arm driven by the recorded commands. For each of the five parameters the reported
intervals must contain the hidden value in at least 85 % of the seeds, and be narrow enough to
say something (an interval as wide as the range the values were drawn from covers by default).
"""

from __future__ import annotations

import pytest

from benchmarks.coverage import ARM_FREE, HIDDEN_RANGES, coverage

SEEDS = 20
MIN_COVERAGE = 0.85
#: A median 95 % half-width must stay below this fraction of the range the values were drawn from.
MAX_HALFWIDTH = 0.25


@pytest.mark.slow
def test_intervals_of_all_five_parameters_cover_the_hidden_values_in_repeated_noisy_experiments() -> None:
    summary = coverage("arm", SEEDS, workers=2)
    print({name: f"{summary[name]['covered']}/{SEEDS}, half-width {summary[name]['median_ci95_halfwidth']:.3g}"
           for name in ARM_FREE})
    assert summary["fits"] == SEEDS and not summary["errors"]
    for name in ARM_FREE:
        assert summary[name]["coverage"] >= MIN_COVERAGE, (name, summary[name])
    # Not vacuous: the intervals are narrow against the drawn ranges, and the errors are of the
    # order of the standard deviations (not far inside them).
    for name in ARM_FREE:
        low, high = HIDDEN_RANGES[name]
        assert summary[name]["median_ci95_halfwidth"] < MAX_HALFWIDTH * (high - low), (name, summary[name])
        assert 0.2 < summary[name]["median_error_over_std"] < 2.0, (name, summary[name])
