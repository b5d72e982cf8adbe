"""System identification never answers silently wrong: missing inputs are errors naming the topic, the
pusher comes from the recorded pose when there is one, rows after degraded solver steps are left out and
counted, trial steps that degrade are rejected, failing trials are left out and named, and a fit that
stops at its iteration limit says so.

The recordings are simulated here (a sphere pushing the box along x, then stopping, so that the box
slides out under table friction), with the hidden values the fits must find.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest
from fixtures.pushed_box import HIDDEN, NOMINAL, OTHER_ROBOT_Q, data, pusher_record

from sim2real.errors import Sim2RealError
from sim2real.physics import BoxWorld
from sim2real.physics.warm_start import WarmStart
from sim2real.sim import BoxState, StepOutcome, StepResult
from sim2real.sim.world import advance_each
from sim2real.sysid import (
    FitProblem,
    LMSettings,
    ResidualSpec,
    fit_trials,
    resolve_mode,
    resolve_pusher,
    trial_residuals,
)
from sim2real.sysid.prediction.replay import replay
from sim2real.trials import PoseSeries, TrialRecord

# -- what a mode needs ----------------------------------------------------------------------------

def test_a_trial_with_only_a_pusher_pose_is_a_pusher_trial_not_a_lone_box() -> None:
    trial = data(pusher_record("probe"))
    assert trial.kind == "pusher" and trial.pusher_position is not None
    assert resolve_mode(trial) == "pusher" and resolve_pusher(trial) == "recorded"
    # The old behaviour was a free box: the replay must reproduce the pushed box instead.
    replayed = replay(pusher_record("probe"), HIDDEN, mode="pusher")
    assert replayed.mode == "pusher" and replayed.pusher == "recorded /real/pusher_pose"
    sim, real = replayed.record.platforms["sim"].box_pose, replayed.record.platforms["real"].box_pose
    assert sim.position[-1, 0] - sim.position[0, 0] > 0.1  # pushed more than 10 cm
    np.testing.assert_allclose(sim.position[-1], real.position[-1], atol=1e-6)
    assert replayed.record.meta["solver"]["sim"]["steps"] == len(real) - 1


@pytest.mark.parametrize(("mode", "record", "topic"), [
    ("pusher", pusher_record("box_only", pusher_pose=False), "/real/pusher_pose"),
    ("commands", pusher_record("probe"), "/real/joint_states"),
    ("closed", pusher_record("probe"), "/real/joint_states"),
    ("kinematic", pusher_record("probe"), "/real/joint_states"),
    ("commands", pusher_record("no_cmd", joints=OTHER_ROBOT_Q, reference=True), "/real/joint_command"),
    ("closed", pusher_record("no_ref", joints=OTHER_ROBOT_Q, commands=True), "/reference/joint_trajectory"),
    ("auto", pusher_record("neither", joints=OTHER_ROBOT_Q), "/real/joint_command"),
])
def test_a_mode_without_its_inputs_names_the_trial_and_the_topic(mode: str, record: TrialRecord,
                                                                topic: str) -> None:
    with pytest.raises(Sim2RealError, match=rf"trial '{record.name}'.*{topic}"):
        replay(record, HIDDEN, mode=mode)
    with pytest.raises(Sim2RealError, match=rf"trial '{record.name}'.*{topic}"):
        trial_residuals(data(record), HIDDEN, (), ResidualSpec(horizon=None, mode=mode))


def test_whole_trial_fit_without_commands_or_reference_is_left_out_not_held_still() -> None:
    good = pusher_record("probe")
    neither = pusher_record("neither", joints=OTHER_ROBOT_Q)
    result = fit_trials(FitProblem([good, neither], NOMINAL, "contact.mu_table", spec=ResidualSpec(horizon=None)),
                        settings=LMSettings(max_iterations=8))
    (failure,) = result.failures
    assert failure.name == "neither" and "/reference/joint_trajectory" in failure.reason
    assert any("trial left out" in p and "neither" in p for p in result.problems)
    assert [t["name"] for t in result.data["trials"]] == ["probe"]
    assert result.values["contact.mu_table"] == pytest.approx(0.3, rel=0.02)
    with pytest.raises(Sim2RealError, match="neither"):
        fit_trials(FitProblem([neither], NOMINAL, "contact.mu_table", spec=ResidualSpec(horizon=None)))


def test_explicit_pusher_source_contradicting_the_mode_is_an_error() -> None:
    trial = data(pusher_record("arm", joints=OTHER_ROBOT_Q, commands=True))
    with pytest.raises(Sim2RealError, match="does not apply to the commands mode"):
        resolve_mode(trial, "commands", "recorded")
    with pytest.raises(Sim2RealError, match="contradicts the pusher mode") as err:
        resolve_mode(trial, "pusher", "arm")
    assert err.value.option == "pusher"  # the CLI prefixes --pusher
    assert resolve_mode(trial, "auto", "recorded") == "kinematic"
    with pytest.raises(Sim2RealError, match=r"trial 'probe' has no /real/joint_states \(needed by the pusher source "
                                            r"'arm'\)") as err:
        resolve_pusher(data(pusher_record("probe")), "arm")
    assert err.value.option == "pusher"


# -- where the pusher comes from ------------------------------------------------------------------

def test_fit_takes_the_recorded_pusher_not_fk_of_another_robots_joints() -> None:
    record = pusher_record("other_robot", joints=OTHER_ROBOT_Q)
    settings = LMSettings(max_iterations=10)
    recorded = fit_trials(FitProblem([record], NOMINAL, "contact.mu_table", spec=ResidualSpec(horizon=1)),
                          settings=settings)
    assert recorded.data["trials"][0]["pusher"] == "recorded /real/pusher_pose"
    assert recorded.values["contact.mu_table"] == pytest.approx(0.3, rel=0.01)
    assert recorded.status == "converged" and recorded.ok, recorded.problems
    # FK of the other robot's joints puts the pusher behind the base: the fit then explains a pushed
    # box by (almost) no friction — the silent wrong answer the recorded pose avoids.
    fk = fit_trials(FitProblem([record], NOMINAL, "contact.mu_table", spec=ResidualSpec(horizon=1, pusher="arm")),
                    settings=settings)
    assert fk.data["trials"][0]["pusher"] == "xArm FK of the recorded /real/joint_states"
    assert fk.values["contact.mu_table"] < 0.2


# -- degraded solver steps ------------------------------------------------------------------------

def _step_by_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of steps go through ``BoxWorld.step`` one step at a time (the compiled loop calls it only for
    the steps it hands to the ladder), so that a patched ``step`` sees every step."""
    monkeypatch.setattr(BoxWorld, "advance", advance_each)


def _degrading_step(original: Callable[..., StepResult],
                    when: Callable[[BoxWorld, int | None], bool]) -> Callable[..., StepResult]:
    """A stand-in for ``BoxWorld.step`` that marks the steps ``when`` picks as degraded."""
    def step(self: BoxWorld, state: BoxState, pusher_start: np.ndarray | None = None,
             pusher_end: np.ndarray | None = None, grad: bool = False, param_names: tuple[str, ...] = (),
             step_index: int | None = None, warm_start: WarmStart | None = None) -> StepResult:
        result = original(self, state, pusher_start, pusher_end, grad=grad, param_names=param_names,
                          step_index=step_index, warm_start=warm_start)
        if when(self, step_index):
            return dataclasses.replace(result, outcome=StepOutcome.DEGRADED, rung="best iterate")
        return result
    return step


def test_rows_after_a_degraded_step_are_flagged_within_their_segment(monkeypatch: pytest.MonkeyPatch) -> None:
    trial = data(pusher_record("probe"))
    _step_by_step(monkeypatch)
    monkeypatch.setattr(BoxWorld, "step", _degrading_step(BoxWorld.step, lambda world, k: k == 23))
    res = trial_residuals(trial, HIDDEN, ("contact.mu_table",), ResidualSpec(horizon=10))
    assert res.solve is not None and res.solve.degraded == 1
    # Segments start at k = 1, 11, 21, ...: the segment [21, 31) has its steps 23..30 flagged, 6 rows each.
    assert int(res.dropped_mask.sum()) == 8 * 6
    rows_per_step = 6
    flagged_steps = np.flatnonzero(res.dropped_mask[::rows_per_step]) + 1
    np.testing.assert_array_equal(flagged_steps, np.arange(23, 31))
    whole = trial_residuals(trial, HIDDEN, (), ResidualSpec(horizon=None))
    assert int(whole.dropped_mask.sum()) == (trial.steps - 23) * 6  # every row from state 24 on


def test_fit_leaves_out_rows_of_degraded_steps_and_rejects_steps_that_degrade_more(
        monkeypatch: pytest.MonkeyPatch) -> None:
    record = pusher_record("probe")
    start = NOMINAL.replace({"contact.mu_table": 0.35})
    _step_by_step(monkeypatch)
    monkeypatch.setattr(BoxWorld, "step", _degrading_step(BoxWorld.step, lambda world, k: k == 40))
    result = fit_trials(FitProblem([record], start, "contact.mu_table", spec=ResidualSpec(horizon=20)),
                        settings=LMSettings(max_iterations=10))
    # Segments [1, 21), [21, 41), [41, 60): step 40 ends the second one, so only its own 6 rows go.
    assert result.dropped_rows == 6
    assert result.solver["start"]["degraded"] >= 1
    assert any("residual rows left out" in p for p in result.problems)
    assert result.values["contact.mu_table"] == pytest.approx(0.3, rel=0.02)  # the clean rows still fit
    # Now every trial point degrades a step whose rows are in the fit: each step is rejected and noted.
    monkeypatch.undo()
    _step_by_step(monkeypatch)
    monkeypatch.setattr(BoxWorld, "step", _degrading_step(
        BoxWorld.step, lambda world, k: k == 5 and float(world.params["contact.mu_table"]) != 0.35))
    stuck = fit_trials(FitProblem([record], start, "contact.mu_table", spec=ResidualSpec(horizon=20)),
                       settings=LMSettings(max_iterations=3))
    rejected = [e for e in stuck.trace[1:] if not e["accepted"]]
    assert len(rejected) == len(stuck.trace) - 1 >= 1
    assert all("degraded solver step" in e["note"] for e in rejected)
    assert stuck.values["contact.mu_table"] == 0.35


def test_strict_mode_reaches_every_engine_step(monkeypatch: pytest.MonkeyPatch) -> None:
    record = pusher_record("probe")
    seen: set[bool] = set()
    _step_by_step(monkeypatch)
    monkeypatch.setattr(BoxWorld, "step", _degrading_step(
        BoxWorld.step, lambda world, k: seen.add(world.settings.strict) and False))
    fit_trials(FitProblem([record], NOMINAL, "contact.mu_table", spec=ResidualSpec(horizon=20, strict=True)),
               settings=LMSettings(max_iterations=1))
    replay(record, HIDDEN, strict=True)
    assert seen == {True}
    replay(record, HIDDEN)
    assert seen == {True, False}


# -- failures and status --------------------------------------------------------------------------

def test_a_trial_failing_at_the_start_is_left_out_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    good, bad = pusher_record("good"), pusher_record("bad")
    bad = dataclasses.replace(bad, platforms={"real": dataclasses.replace(
        bad.platforms["real"], pusher_pose=PoseSeries(bad.platforms["real"].pusher_pose.t,
                                                      np.full((61, 3), np.nan), np.tile([1.0, 0, 0, 0], (61, 1))))})
    result = fit_trials(FitProblem([good, bad], NOMINAL, "contact.mu_table", spec=ResidualSpec(horizon=10)),
                        settings=LMSettings(max_iterations=8))
    (failure,) = result.failures
    assert failure.name == "bad" and failure.stage == "start" and "not finite" in failure.reason
    assert "step" in failure.reason  # the engine names the step
    assert result.values["contact.mu_table"] == pytest.approx(0.3, rel=0.02)
    with pytest.raises(Sim2RealError, match=r"trial 'bad'.*not finite"):
        fit_trials(FitProblem([bad], NOMINAL, "contact.mu_table", spec=ResidualSpec(horizon=10)))


def test_a_fit_stopped_by_its_iteration_limit_is_not_converged() -> None:
    record = pusher_record("probe")
    stopped = fit_trials(FitProblem([record], NOMINAL, "contact.mu_table", spec=ResidualSpec(horizon=1)),
                         settings=LMSettings(max_iterations=1))
    assert stopped.stop_reason == "maximum iterations" and stopped.status == "not converged"
    assert stopped.problems[0].startswith("not converged: stopped at the iteration limit (1 iterations)")
    document = stopped.to_json()
    assert list(document)[:2] == ["status", "problems"] and document["status"] == "not converged"
    finished = fit_trials(FitProblem([record], NOMINAL, "contact.mu_table", spec=ResidualSpec(horizon=1)),
                          settings=LMSettings(max_iterations=20))
    assert finished.status == "converged" and finished.ok


def test_a_parameter_at_its_bound_and_a_rising_held_out_cost_are_problems() -> None:
    record = pusher_record("probe")
    bounded = fit_trials(FitProblem([record], NOMINAL, "contact.mu_table", spec=ResidualSpec(horizon=1),
                                    bounds={"contact.mu_table": (0.4, 0.9)}), settings=LMSettings(max_iterations=10))
    assert bounded.values["contact.mu_table"] == pytest.approx(0.4)
    assert any("at its lower bound 0.4" in p for p in bounded.problems) and not bounded.ok
    # Held-out trials with another friction: fitting towards 0.3 moves away from their 0.5.
    held = pusher_record("held_out", NOMINAL)
    fitted = fit_trials(FitProblem([record], NOMINAL, "contact.mu_table", spec=ResidualSpec(horizon=1),
                                   validation=[held]), settings=LMSettings(max_iterations=10))
    costs = [c["cost"] for c in fitted.validation["cost"]]
    assert costs[0] < 1e-6 < costs[-1]
    assert any(p.startswith("held-out cost rose") for p in fitted.problems)
