"""The trial jackknife of refits: its spread, the intervals it widens, and ``fit --jackknife``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from fixtures.pushed_box import NOMINAL
from scipy import stats
from test_validation import probe_push

from sim2real.cli import main
from sim2real.errors import Sim2RealError
from sim2real.sysid import FitProblem, FreeParameters, ResidualSpec, fit_trials
from sim2real.sysid.uncertainty.jackknife import RefitJackknife, refit_jackknife, with_refit_jackknife
from sim2real.trials import TrialRecord, write_run_meta, write_trial


def _problem(count: int) -> FitProblem:
    return FitProblem([TrialRecord(f"t{k}", {}, None, {}) for k in range(count)], NOMINAL, "contact.mu_table")


def test_the_jackknife_spread_is_the_leave_one_out_formula_and_skips_failed_refits() -> None:
    by_left_out = {"t0": 0.30, "t1": 0.34, "t2": None, "t3": 0.32}

    def refit(subset: FitProblem) -> SimpleNamespace:
        missing = ({"t0", "t1", "t2", "t3"} - {r.name for r in subset.records}).pop()
        if by_left_out[missing] is None:
            raise Sim2RealError("no trial can be fitted")
        return SimpleNamespace(values={"contact.mu_table": by_left_out[missing]})

    lines: list[str] = []
    jk = refit_jackknife(_problem(4), ["contact.mu_table"], refit, lines.append)
    assert jk is not None and len(lines) == 4 and jk.values["contact.mu_table"][2] is None
    assert jk.failures == ("without 't2': no trial can be fitted",)
    sample = np.array([0.30, 0.34, 0.32])
    expected = np.sqrt(2 / 3 * np.sum((sample - sample.mean()) ** 2))
    assert jk.std["contact.mu_table"] == pytest.approx(expected)
    assert jk.ci95_halfwidth["contact.mu_table"] == pytest.approx(stats.t.ppf(0.975, 2) * expected)
    assert refit_jackknife(_problem(2), ["contact.mu_table"], lambda s: (_ for _ in ()).throw(Sim2RealError("x"))) \
        is None


@dataclasses.dataclass(frozen=True)
class _Result:
    """The parts of a FitResult the widening reads and replaces."""

    values: dict
    std: dict
    ci95: dict
    data: dict

    @property
    def free(self) -> FreeParameters:
        """Every value a shared unknown of its own."""
        return FreeParameters(tuple((name,) for name in self.values))


def test_wider_refits_widen_the_interval_and_narrower_ones_do_not() -> None:
    result = _Result({"contact.mu_table": 0.3, "contact.mu_pusher": 0.4},
                     {"contact.mu_table": 0.001, "contact.mu_pusher": 0.2},
                     {"contact.mu_table": [0.298, 0.302], "contact.mu_pusher": [0.0, 0.8]},
                     {"uncertainty": {"method": "sandwich"}})
    jk = RefitJackknife(("t0", "t1", "t2"), {"contact.mu_table": [0.28, 0.30, 0.32], "contact.mu_pusher": [0.4] * 3},
                        {"contact.mu_table": 0.02, "contact.mu_pusher": 0.0},
                        {"contact.mu_table": 0.086, "contact.mu_pusher": 0.0})
    widened = with_refit_jackknife(result, jk)
    assert widened.std["contact.mu_table"] == 0.02
    assert widened.ci95["contact.mu_table"] == pytest.approx([0.214, 0.386])
    assert widened.std["contact.mu_pusher"] == 0.2 and widened.ci95["contact.mu_pusher"] == [0.0, 0.8]
    method = widened.data["uncertainty"]["method"]
    assert method.startswith("sandwich; trial jackknife of 3 leave-one-out refits")
    assert "wider than the sandwich for contact.mu_table" in method
    assert "not wider than the sandwich for contact.mu_pusher" in method
    assert widened.data["uncertainty"]["refit_jackknife"]["left_out"] == ["t0", "t1", "t2"]


@pytest.mark.slow
def test_fit_jackknife_refits_without_each_trial_end_to_end(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    result = fit_trials(FitProblem([probe_push(f"p{k}", s) for k, s in enumerate((0.45, 0.5, 0.6))], NOMINAL,
                                   "contact.mu_table", spec=ResidualSpec(horizon=1)), jackknife=True)
    refits = result.data["uncertainty"]["refit_jackknife"]
    assert refits["left_out"] == ["p0", "p1", "p2"]
    # Noise-free recordings: every refit finds the hidden friction, so the jackknife is not wider.
    assert refits["values"]["contact.mu_table"] == pytest.approx([0.3, 0.3, 0.3], rel=1e-3)
    assert "not wider than the sandwich for contact.mu_table" in result.data["uncertainty"]["method"]
    pooled = fit_trials(FitProblem([probe_push(f"p{k}", s) for k, s in enumerate((0.45, 0.5, 0.6))], NOMINAL,
                                   "contact.mu_table", spec=ResidualSpec(horizon=1)),
                        workers=2, jackknife=True)  # refits as tasks of 2 workers
    assert pooled.data["uncertainty"]["refit_jackknife"] == refits and pooled.std == result.std
    run = tmp_path / "probe"
    for k, speed in enumerate((0.45, 0.5, 0.6)):
        write_trial(run, probe_push(f"push_{k}", speed))
    write_run_meta(run, {"mode": "imported"})
    out = tmp_path / "fitted.yaml"
    assert main(["fit", str(run), "--free", "contact.mu_table", "--jackknife", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "jackknife: refit 3/3 without trial 'push_2'" in err and "trial jackknife of 3 leave-one-out" in err
    assert json.loads(out.with_suffix(".json").read_text())["data"]["uncertainty"]["refit_jackknife"]["left_out"] \
        == ["push_0", "push_1", "push_2"]


def test_measured_refits_replace_a_linearized_jackknife_that_ran_off() -> None:
    """One trial carried nearly all of the box height's local curvature: the linear step without it
    ran off (std 0.106 m, the interval the whole registry range, as in a demo run), while the refitted
    minima moved by about 1.5 mm. The measured jackknife stands in place of the linearized one."""
    result = _Result({"box.com_z": -0.0585}, {"box.com_z": 0.106}, {"box.com_z": [-0.5, 0.5]},
                     {"uncertainty": {"method": "sandwich", "std_sandwich": {"box.com_z": 7.3e-6},
                                      "dof": {"box.com_z": 1.0}}})
    jk = RefitJackknife(("t0", "t1", "t2"), {"box.com_z": [-0.0585, -0.0602, -0.0585]},
                        {"box.com_z": 0.0015}, {"box.com_z": 0.0035})
    measured = with_refit_jackknife(result, jk)
    assert measured.std["box.com_z"] == 0.0015
    assert measured.ci95["box.com_z"] == pytest.approx([-0.062, -0.055])
    assert measured.data["uncertainty"]["dof"]["box.com_z"] == 2.0  # the refits' t, as the interval
    # Refits that moved less than the sandwich allows: the sandwich with the parameter's own t (1 dof).
    still = with_refit_jackknife(result, RefitJackknife(("t0", "t1"), {"box.com_z": [-0.0585] * 2},
                                                        {"box.com_z": 1e-6}, {"box.com_z": 1e-5}))
    assert still.std["box.com_z"] == 7.3e-6
    assert still.ci95["box.com_z"] == pytest.approx([-0.0585 - 12.706 * 7.3e-6, -0.0585 + 12.706 * 7.3e-6], rel=1e-4)
