"""A step always returns: the escalation ladder, outcome classes, hard-step files and the regression corpus.

The corpus (``tests/corpus/hard_steps/``) holds steps whose first solve failed, found by sweeping
arm pushes (random friction, mass, centre of mass, speed, placement), pusher paths that separate
and re-hit the box at up to 1 m/s with jitter, and parameter values at their bounds. Each file
records the outcome it had when it was found.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from sim2real.cli import main
from sim2real.errors import Sim2RealError
from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld, HardStep, SolverSettings, solve_step
from sim2real.physics.ladder import LADDER
from sim2real.physics.layout import PARAMS_OFFSET, THETA_PARAMS
from sim2real.sim import BoxState, SimulationError, SolveLog, StepOutcome, rollout
from sim2real.sim.solve_log import SolveSummary

CORPUS = sorted((Path(__file__).parents[1] / "corpus" / "hard_steps").glob("*.json"))
RECORDED = {"converged": StepOutcome.CONVERGED, "recovered": StepOutcome.RECOVERED, "degraded": StepOutcome.DEGRADED}


def test_corpus_is_there():
    assert len(CORPUS) >= 10
    assert all(HardStep.load(path).settings.skip_band == 0.0 for path in CORPUS)  # as recorded
    outcomes = {HardStep.load(path).outcome for path in CORPUS}
    assert outcomes == {"recovered", "degraded"}


def _far_contacts_left_out(problem: HardStep) -> HardStep:
    """The step with today's default of leaving far contacts out of the solve (the corpus files predate it, and
    load as recorded: every contact in the solve)."""
    return dataclasses.replace(problem, settings=dataclasses.replace(
        problem.settings, skip_band=SolverSettings().skip_band))


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_step_with_far_contacts_left_out_resolves_and_is_no_worse(path):
    problem = _far_contacts_left_out(HardStep.load(path))
    solution = solve_step(problem)
    recorded = RECORDED[problem.outcome]
    assert np.all(np.isfinite(solution.next_state)) and solution.outcome <= recorded
    if solution.outcome == StepOutcome.DEGRADED:
        assert solution.violation[0] <= max(10 * problem.violation[0], 1e-6)
    else:
        assert solution.violation[0] <= 1e-9


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_step_resolves_without_exception_and_no_worse(path):
    problem = HardStep.load(path)
    solution = solve_step(problem)
    assert np.all(np.isfinite(solution.next_state))
    assert abs(np.linalg.norm(solution.next_state[3:7]) - 1.0) < 1e-6
    recorded = RECORDED[problem.outcome]
    if solution.outcome == StepOutcome.DEGRADED:
        # still flagged, and its violation has not grown
        assert recorded == StepOutcome.DEGRADED
        assert solution.violation[0] <= max(10 * problem.violation[0], 1e-6)
        assert solution.kappa <= 1e-4 or solution.rung.accept_best
    else:
        assert solution.outcome <= recorded
        assert solution.violation[0] <= 1e-9  # converged or recovered: the equality rows meet the tolerance
    assert solution.attempts[0].status != 0  # the first solve fails: still a hard step (else drop it)


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_strict_mode_raises_only_for_degraded_steps(path):
    problem = HardStep.load(path)
    if solve_step(problem).outcome == StepOutcome.DEGRADED:
        with pytest.raises(SimulationError, match=r"step \d+: interior-point solver .* recovery rungs tried"):
            solve_step(problem, strict=True)
    else:
        assert solve_step(problem, strict=True).outcome == StepOutcome.RECOVERED


def test_world_step_reports_outcome_and_a_reproducible_problem():
    problem = HardStep.load(CORPUS[0])
    params = ParameterSet.nominal().replace(
        {name: value for name, value in json.loads(CORPUS[0].read_text())["params"].items()
         if name != "pusher.radius"})
    radius = float(problem.theta[PARAMS_OFFSET + THETA_PARAMS.index("pusher.radius")])
    world = BoxWorld.from_params(params.replace({"pusher.radius": radius}))
    theta = problem.theta
    state = BoxState.from_vector(theta[0:13])
    result = world.step(state, theta[13:16], theta[19:22], step_index=7)
    assert result.outcome == StepOutcome.RECOVERED
    assert result.rung != "first" and result.problem is not None
    assert result.problem.step_index == 7 and result.problem.outcome == "recovered"
    np.testing.assert_array_equal(result.problem.theta, theta)
    # re-solving the record gives the same state
    np.testing.assert_allclose(solve_step(result.problem).next_state, result.state.as_vector(), atol=1e-12)


def test_easy_steps_converge_first_time_and_carry_no_problem():
    world = BoxWorld.from_params(ParameterSet.nominal())
    state = BoxState([0.0, 0.0, 0.105], [1, 0, 0, 0], [0.5, 0.0, 0.0])
    result = world.step(state)
    assert result.outcome == StepOutcome.CONVERGED and result.rung == "first" and result.problem is None


def test_rollout_tallies_outcomes_and_keeps_hard_steps():
    log = SolveLog("unit")
    problem = HardStep.load(CORPUS[0])

    class _Result:  # what SolveLog reads of a StepResult
        def __init__(self, outcome: StepOutcome, rung: str, violation: tuple[float, float]) -> None:
            self.outcome, self.rung, self.violation, self.kappa = outcome, rung, violation, 1e-6
            self.problem = problem

    log.record(_Result(StepOutcome.CONVERGED, "first", (0.0, 0.0)))
    log.record(_Result(StepOutcome.RECOVERED, "substeps", (1e-10, 1e-8)))
    log.record(_Result(StepOutcome.DEGRADED, "relaxed-kappa", (1e-9, 1e-6)))
    summary = log.summary()
    assert (summary.steps, summary.converged, summary.recovered, summary.degraded) == (3, 1, 1, 1)
    assert summary.worst_step == 2 and summary.worst == StepOutcome.DEGRADED and not summary.ok
    assert summary.rungs == {"substeps": 1, "relaxed-kappa": 1}
    assert [h.step_index for h in log.hard_steps] == [1, 2]
    assert all(h.context == "unit" for h in log.hard_steps)
    np.testing.assert_array_equal(log.outcomes, [0, 1, 2])
    assert SolveSummary.from_dict(summary.as_dict()) == summary
    merged = summary.merged(SolveSummary(steps=10, converged=10))
    assert (merged.steps, merged.degraded, merged.worst_step) == (13, 1, 2)
    # a real rollout has a tally with one entry per step
    world = BoxWorld.from_params(ParameterSet.nominal())
    result = rollout(world, BoxState([0.0, 0.0, 0.2], [1, 0, 0, 0]), steps=30)
    assert result.solve.steps == 30 == result.outcomes.shape[0]


def test_hard_step_file_round_trip_and_refuses_to_overwrite(tmp_path):
    problem = HardStep.load(CORPUS[-1])
    path = problem.save(tmp_path / "a.json")
    again = HardStep.load(path)
    np.testing.assert_array_equal(again.theta, problem.theta)
    assert (again.dt, again.substeps, again.capsule, again.kappa_sim, again.settings) == (
        problem.dt, problem.substeps, problem.capsule, problem.kappa_sim, problem.settings)
    with pytest.raises(Sim2RealError, match="already exists"):
        problem.save(path)
    (tmp_path / "bad.json").write_text('{"format": "something else"}')
    with pytest.raises(Sim2RealError, match="not a hard-step file"):
        HardStep.load(tmp_path / "bad.json")


def test_ladder_order_recovery_before_degradation():
    outcomes = [rung.outcome for rung in LADDER]
    assert outcomes[0] == StepOutcome.CONVERGED
    first_degraded = outcomes.index(StepOutcome.DEGRADED)
    assert all(o == StepOutcome.RECOVERED for o in outcomes[1:first_degraded])
    assert all(o == StepOutcome.DEGRADED for o in outcomes[first_degraded:])
    assert LADDER[-1].accept_best


def test_non_finite_pusher_placement_is_bad_input_not_a_solver_failure():
    world = BoxWorld.from_params(ParameterSet.nominal(), settings=SolverSettings())
    state = BoxState([0.4, 0.0, 0.105], [1, 0, 0, 0])
    with pytest.raises(Sim2RealError, match="pusher_end at step 3 is not finite"):
        world.step(state, np.array([0.3, 0.0, 0.1]), np.array([np.nan, 0.0, 0.1]), step_index=3)


def _by_outcome(outcome: str) -> Path:
    return next(p for p in CORPUS if HardStep.load(p).outcome == outcome)


def test_resolve_step_command_prints_rungs_and_trace(capsys):
    recovered, degraded = _by_outcome("recovered"), _by_outcome("degraded")
    assert main(["resolve-step", str(recovered)]) == 0
    out = capsys.readouterr().out
    assert "first" in out and "not converged" in out and "=> recovered by rung" in out
    assert main(["resolve-step", "--trace", str(degraded)]) == 1
    out = capsys.readouterr().out
    assert "residual" in out and "path_error" in out and "=> degraded by rung" in out
    assert len(out.splitlines()) > 50  # one row per interior-point iteration
    assert main(["resolve-step", "--strict", str(degraded)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sim2real: error: step") and len(err.strip().splitlines()) == 1
    assert main(["resolve-step", "--json", str(recovered)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["outcome"] == "recovered" and data["attempts"][0]["trace"]


def test_resolve_step_missing_file_is_one_line(capsys, tmp_path):
    assert main(["resolve-step", str(tmp_path / "nope.json")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and len(err.strip().splitlines()) == 1


def test_a_stalled_exact_gradient_is_taken_one_decade_up_with_the_forward_state_unchanged():
    """A thin plate that has just landed (corners touching at zero force), hit by a rod, with gradients at
    κ_sim as a fit takes them: the centred solve stalled and the step was degraded (found by a thin-plate
    fit, issue 15). Now the gradient comes from κ 1e-7 and the state is the exact forward solution."""
    problem = HardStep.load(Path(__file__).parents[1] / "corpus" / "hard_steps"
                            / "landed_plate_rod_impact_exact_gradient.json")
    assert problem.grad and problem.kappa_grad == problem.kappa_sim == 1e-8 and problem.outcome == "degraded"
    solution = solve_step(problem)
    assert solution.outcome == StepOutcome.RECOVERED and solution.rung.name == "smoothed-gradient"
    assert solution.kappa == 1e-8 and solution.jacobian is not None and np.all(np.isfinite(solution.jacobian))
    forward = solve_step(HardStep(problem.theta, problem.dt, problem.substeps, problem.with_pusher,
                                  problem.capsule, problem.kappa_sim, problem.kappa_sim, grad=False))
    assert solution.violation[0] <= 1e-9  # the forward state meets the tolerances at κ_sim
    # This step has more than one solution at κ_sim (friction at a kinematic pusher and four touching corners):
    # reached from κ 1e-7 it differs from the direct solve by 1.7 µm and 0.17 mm/s (measured).
    np.testing.assert_allclose(solution.next_state[:7], forward.next_state[:7], atol=1e-5)
    np.testing.assert_allclose(solution.next_state[7:], forward.next_state[7:], atol=1e-3)
    # Without gradients the rung is skipped: nothing it would change.
    assert [a.rung.name for a in forward.attempts] == ["first"]
