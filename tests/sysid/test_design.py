"""Experiment design (``sim2real.sysid.design``): the search, the forecast, the prior and what the arm can do."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from sim2real.control import Workspace, load_experiment_config
from sim2real.errors import InputError
from sim2real.execution import open_executor
from sim2real.model import load_arm
from sim2real.params import ParameterSet
from sim2real.sysid.design import PushSpace, design_pushes, plan_candidate, prior_from_bounds
from sim2real.sysid.design.select import Known, outlook, random_half_widths, select_pushes
from sim2real.sysid.design.space import LEFT_OUT_KINDS, Candidate
from sim2real.sysid.prediction.standard_trial import run_standard_trial
from sim2real.sysid.problem.free import FreeParameters
from sim2real.sysid.residuals.types import ResidualSpec


def _known(p: int, earlier: np.ndarray | None = None, trials: int = 0) -> Known:
    return Known(np.eye(p) * 1e-6, np.zeros((p, p)) if earlier is None else earlier, trials)


@pytest.mark.parametrize("criterion", ["W", "D"])
def test_the_search_takes_the_pushes_that_inform_different_parameters(criterion: str) -> None:
    """Two unknowns, three candidates: one informs the first, one the second, one both a little. The W and D
    pairs take one of each (greedy takes the balanced push first; the exchange swaps it out); the forecast
    covariance is the closed form (R + H1 + H2)^-1. (A, the trace, keeps the balanced push twice: a local optimum
    of single swaps, trace 1 against 0.2.)"""
    h1, h2, h3 = np.diag([10.0, 0.0]), np.diag([0.0, 10.0]), np.diag([1.0, 1.0])
    known = _known(2)
    selection = select_pushes(known, [[h1, h2, h3]], 2, np.arange(2), criterion)
    assert sorted(selection.chosen) == [0, 1]
    view = outlook(known, [h1, h2])
    np.testing.assert_allclose(view.covariance, np.diag([1 / (10 + 1e-6)] * 2))
    # each unknown is informed by one push of the two: one effective trial, the quantile of one dof (12.7)
    np.testing.assert_allclose(view.dof, [1.0, 1.0])
    np.testing.assert_allclose(selection.half_widths[-1], stats.t.ppf(0.975, 1) / np.sqrt(10 + 1e-6))


def test_the_width_criterion_spreads_the_information_over_trials() -> None:
    """Three earlier trials inform an unknown a little. One push that alone carries nearly all the information
    leaves the refit's interval with few effective trials (a large Student's t); two modest pushes give less
    information but more effective trials and a narrower interval as the fit will report it. W takes the modest
    pushes, D the strong one (it sees only the information)."""
    earlier = np.diag([9.0])
    known = _known(1, earlier, 3)
    strong, modest = np.diag([60.0]), np.diag([12.0])
    alone = outlook(known, [strong])
    shared = outlook(known, [modest, modest])
    assert outlook(known, [strong, strong]).half_width[0] > shared.half_width[0]
    # shares of the variance: three earlier trials at 1 each and the pushes at their information
    for view, blocks in ((alone, [3, 3, 3, 60]), (shared, [3, 3, 3, 12, 12])):
        effective = sum(blocks) ** 2 / sum(b * b for b in blocks)
        assert view.dof[0] == pytest.approx(max(1.0, min(effective, len(blocks)) - 1.0))
    assert alone.covariance[0, 0] < shared.covariance[0, 0]  # more information in all ...
    assert alone.half_width[0] > shared.half_width[0]  # ... but a wider interval as the refit will report it
    assert select_pushes(known, [[strong, modest]], 2, np.arange(1), "W").chosen == (1, 1)
    assert select_pushes(known, [[strong, modest]], 2, np.arange(1), "D").chosen == (0, 0)


def test_a_target_changes_the_choice() -> None:
    """Targeting the second unknown only, one push: the one that informs it."""
    h1, h2 = np.diag([10.0, 0.0]), np.diag([0.0, 3.0])
    assert select_pushes(_known(2), [[h1, h2]], 1, np.array([1]), "D").chosen == (1,)
    assert select_pushes(_known(2), [[h1, h2]], 1, np.array([0]), "D").chosen == (0,)


def test_the_criterion_is_averaged_over_the_points() -> None:
    """A push very informative at one linearisation point and useless at the other loses to one fairly
    informative at both (the robust choice)."""
    sharp = [np.diag([10.0]), np.diag([0.0])]  # mean log-variance (ln 1/11 + 0) / 2 = -1.2 against ln 1/6 = -1.8
    steady = [np.diag([5.0]), np.diag([5.0])]
    known = Known(np.eye(1), np.zeros((1, 1)), 0)
    informations = [[sharp[0], steady[0]], [sharp[1], steady[1]]]
    assert select_pushes(known, informations, 1, np.arange(1), "D").chosen == (1,)
    assert select_pushes(known, informations, 1, np.arange(1), "W").chosen == (1,)


def test_random_sets_are_forecast_as_the_designed_one_is() -> None:
    """Sets drawn at random from the candidates get the same forecast as a chosen set of those pushes: with
    every candidate alike each set's half-widths are the designed ones; with one informative candidate among
    nine that inform nothing, a set of one holds it in about a tenth of the draws, and only those sets are as
    narrow as the design's."""
    known = _known(2)
    alike = [[np.diag([4.0, 9.0])] * 5]
    chosen = select_pushes(known, alike, 2, np.arange(2))
    halves = random_half_widths(known, alike, 2, np.random.default_rng(0), sets=20)
    np.testing.assert_allclose(halves, np.tile(chosen.half_widths[-1], (20, 1)))
    one = [[np.diag([10.0, 10.0])] + [np.zeros((2, 2))] * 9]
    designed = select_pushes(known, one, 1, np.arange(2)).half_widths[-1]
    halves = random_half_widths(known, one, 1, np.random.default_rng(1), sets=400)
    as_narrow = np.all(np.isclose(halves, designed), axis=1)
    assert 0.05 < as_narrow.mean() < 0.15
    assert np.all(halves[~as_narrow] > 100 * designed)
    # nothing to draw from is refused
    with pytest.raises(InputError, match="random sets"):
        random_half_widths(known, [[]], 1, np.random.default_rng(0))


def test_the_search_refuses_what_it_cannot_do() -> None:
    with pytest.raises(InputError, match="no feasible candidate"):
        select_pushes(_known(1), [[]], 1, np.arange(1))
    with pytest.raises(InputError, match="criterion"):
        select_pushes(_known(1), [[np.eye(1)]], 1, np.arange(1), "E")
    with pytest.raises(InputError, match="at least 1"):
        select_pushes(_known(1), [[np.eye(1)]], 0, np.arange(1))


def test_the_prior_from_bounds_is_uniform_over_them() -> None:
    free = FreeParameters.parse("contact.mu_table,contact.support_ratio")
    prior = prior_from_bounds(free, ParameterSet.nominal(), ResidualSpec(horizon=None, mode="kinematic"), 2.0)
    np.testing.assert_allclose(np.diag(prior.covariance), [2.0 ** 2 / 12, 0.95 ** 2 / 12])
    assert prior.row_variance == 4.0 and prior.undetermined.all()
    points = prior.points(50, np.random.default_rng(0))
    assert points[0] is prior.params
    drawn = np.array([[p["contact.mu_table"], p["contact.support_ratio"]] for p in points[1:]])
    assert drawn[:, 0].min() >= 0.0 and drawn[:, 0].max() <= 2.0 and drawn[:, 1].min() >= 0.05
    assert drawn[:, 0].std() > 0.3  # spread over the bounds, not stuck at the nominal value
    with pytest.raises(InputError, match=r"the target box\.mass is not a free parameter") as err:
        prior.target_index(["box.mass"])
    assert err.value.option == "target"  # the CLI prefixes --target


@pytest.mark.parametrize(("point", "kind"), [
    ({"lateral": 0.07}, "off the face"),
    ({"height": 0.205}, "off the face"),
    ({"distance": 0.62, "end_x": 0.9}, "out of reach"),
])
def test_a_push_the_arm_cannot_make_is_left_out_with_its_reason(point: dict[str, float], kind: str) -> None:
    params = ParameterSet.nominal()
    base = load_experiment_config().push
    space = PushSpace.default(base, params)
    values = {"distance": 0.35, "lateral": 0.0, "height": 0.15, "speed": 0.55, "end_x": 0.40, "box_yaw_deg": 0.0,
              **point}
    reference, reason = plan_candidate(space.candidate(values, params), load_arm(params), params)
    assert reference is None and reason is not None
    assert reason.split(":")[0] == kind and kind in LEFT_OUT_KINDS


def _first_contact_by_sweep(distance: float, lateral: float, yaw_deg: float, params: ParameterSet) -> float:
    """The body y of the first contact of the pusher sphere (moving along base +x at ``lateral``) with the box's
    footprint turned ``yaw_deg``, found by sweeping the sphere's centre in 0.01 mm steps."""
    half = np.array([0.5 * params["box.size_x"], 0.5 * params["box.size_y"]])
    turn = np.radians(yaw_deg)
    to_body = np.array([[np.cos(turn), np.sin(turn)], [-np.sin(turn), np.cos(turn)]])
    for x in np.arange(distance - 0.3, distance, 1e-5):
        centre = to_body @ np.array([x - distance, lateral])
        nearest = np.clip(centre, -half, half)
        if np.linalg.norm(centre - nearest) <= params["pusher.radius"]:
            return float(nearest[1]) if nearest[0] == -half[0] else float("nan")  # nan: not the near face
    raise AssertionError("the sphere never reached the box")


@pytest.mark.parametrize(("lateral", "yaw_deg"), [(0.0, 0.0), (0.03, 0.0), (0.0, 25.0), (0.02, -30.0),
                                                  (-0.04, 15.0), (0.03, 44.0)])
def test_the_contact_on_a_turned_box_is_where_a_sweep_of_the_sphere_first_touches(lateral: float,
                                                                                 yaw_deg: float) -> None:
    """face_offset's closed form against the sphere swept along its path: where it first touches the box's
    footprint, on the near face, to 0.02 mm; a pusher that first meets another face is not on the near face."""
    from sim2real.sysid.design.space import face_offset

    params = ParameterSet.nominal()
    base = load_experiment_config().push
    candidate = Candidate(0.40, replace(base, lateral=lateral, box_yaw_deg=yaw_deg))
    swept = _first_contact_by_sweep(0.40, lateral, yaw_deg, params)
    offset = face_offset(candidate, params)
    assert offset is not None
    if np.isnan(swept):
        assert abs(offset) > 0.5 * params["box.size_y"]
    else:
        assert offset == pytest.approx(swept, abs=2e-5)


def test_a_turned_box_is_placed_turned_and_a_push_that_misses_its_face_is_left_out() -> None:
    """The box's start pose carries the push's yaw (both the experiment's request and the simulated trial); a
    pusher line that meets a turned box beyond the near face's edge margin is "off the face"; the space's candidates
    meet the face where their lateral says, whatever the yaw; a yaw range beyond 45 degrees is refused in one
    line."""
    from sim2real.control.reference import box_start_pose
    from sim2real.spatial import yaw
    from sim2real.trials.experiment import requested_box_pose

    params = ParameterSet.nominal()
    base = load_experiment_config().push
    position, quaternion = box_start_pose(0.35, params, 20.0)
    assert position.tolist() == pytest.approx([0.35, 0.0, params["contact.table_height"] + 0.5 * params["box.size_z"]])
    assert np.degrees(yaw(quaternion)) == pytest.approx(20.0) and np.linalg.norm(quaternion) == pytest.approx(1.0)
    assert np.allclose(requested_box_pose(0.35, params, 20.0)[1], quaternion)
    turned = Candidate(0.35, replace(base, lateral=0.0, box_yaw_deg=20.0))
    reference, reason = plan_candidate(turned, load_arm(params), params)
    assert reason is None and reference is not None
    trial = run_standard_trial(0.35, params, reference=reference, push=turned.push)
    assert np.degrees(yaw(trial.result.box[0, 3:7])) == pytest.approx(20.0)
    assert trial.record().meta["push"]["box_yaw_deg"] == 20.0
    # 5 cm off the line of a box turned 30 degrees: the contact would be 10.1 cm off the face centre, past its 6.5 cm
    off = Candidate(0.35, replace(base, lateral=0.05, box_yaw_deg=30.0))
    reference, reason = plan_candidate(off, load_arm(params), params)
    assert reference is None and reason is not None and reason.startswith("off the face: the pusher at y +0.050 m")
    # the space's lateral is where the pusher meets the face: its y is chosen for that at the candidate's yaw
    from sim2real.sysid.design.space import face_offset

    space = PushSpace.default(base, params)
    for contact, yaw_deg in ((0.03, 25.0), (-0.05, -30.0), (0.0, 12.3)):
        point = {"distance": 0.4, "lateral": contact, "height": 0.15, "speed": 0.5, "end_x": 0.45,
                 "box_yaw_deg": yaw_deg}
        candidate = space.candidate(point, params)
        assert face_offset(candidate, params) == pytest.approx(contact, abs=6e-4)  # the pusher's y is whole mm
        assert plan_candidate(candidate, load_arm(params), params)[1] is None
    with pytest.raises(InputError, match=r"^push space box_yaw_deg: \[-50, 50\] deg goes beyond ±45 deg"):
        PushSpace.default(base, params).with_ranges(box_yaw_deg=(-50.0, 50.0))


def test_the_standard_push_is_feasible() -> None:
    params = ParameterSet.nominal()
    reference, reason = plan_candidate(Candidate(0.35, load_experiment_config().push), load_arm(params), params)
    assert reason is None and reference is not None


@pytest.mark.slow  # 5 s: every designed push planned and simulated again (make test, not make check)
def test_every_designed_push_is_feasible_and_keeps_the_box_upright() -> None:
    """Designed pushes, planned and simulated again: every joint inside its limits, every joint rate within its
    limit, the pusher inside the workspace box, and (no-topple) the box tilted at most 10 degrees at every
    linearisation point; the experiment file holds exactly these pushes."""
    params = ParameterSet.nominal()
    free = FreeParameters.parse("contact.mu_table,contact.support_ratio")
    prior = prior_from_bounds(free, params, ResidualSpec(horizon=None, mode="kinematic"), 1.0)
    experiment = load_experiment_config()
    space = PushSpace.default(experiment.push, params).with_ranges(height=(0.10, 0.15))
    with open_executor("local", 1) as executor:
        design = design_pushes(prior, space, 3, executor, candidates=14, seed=3, max_tilt_deg=10.0, points=2)
    arm = load_arm(params)
    points = prior.points(2, np.random.default_rng(3))
    assert len(design.pushes) == 3
    for info in design.pushes:
        reference, reason = plan_candidate(info.candidate, arm, params)
        assert reason is None and reference is not None
        assert all(arm.within_limits(q) for q in reference.position)
        assert np.all(np.abs(reference.velocity) <= arm.max_velocity)
        assert all(Workspace().contains(p) for p in reference.pusher)
        for point in points:
            trial = run_standard_trial(info.candidate.distance, point, reference=reference)
            assert not trial.outcome.flipped and trial.outcome.max_tilt_deg <= 10.0
    config = design.experiment(experiment)
    assert [config.push_of(k) for k in range(3)] == [info.candidate.push for info in design.pushes]
    assert config.distances == tuple(info.candidate.distance for info in design.pushes)
    # the forecast narrows the targets' intervals (their geometric mean: the search's criterion)
    assert np.mean(np.log(design.after[-1].width)) < np.mean(np.log(design.before.width))
    # and random pushes from the same candidates are forecast no narrower than the designed ones, in the median
    assert design.random is not None and design.random.ratio_summary()["median"] >= 1.0 - 1e-9


def test_the_design_record_reads_back_and_finds_its_recorded_pushes(tmp_path) -> None:
    """design.json as the design wrote it: the forecast widths and pushes read back; recorded trials are matched
    to the designed pushes by every coordinate (each trial once); a file of another kind is refused by name."""
    import json

    from sim2real.errors import DataError
    from sim2real.sysid.design import read_design_record

    params = ParameterSet.nominal()
    free = FreeParameters.parse("contact.mu_table")
    prior = prior_from_bounds(free, params, ResidualSpec(horizon=None, mode="kinematic"), 1.0)
    space = PushSpace.default(load_experiment_config().push, params).with_ranges(height=(0.12, 0.12))
    with open_executor("local", 1) as executor:
        design = design_pushes(prior, space, 2, executor, candidates=4, points=1)
    path = tmp_path / "designed.json"
    path.write_text(json.dumps(design.as_dict()))
    record = read_design_record(path)
    assert record.unknowns == ("contact.mu_table",) and record.targets == ("contact.mu_table",)
    assert record.after["contact.mu_table"] == pytest.approx(float(design.after[-1].width[0]))
    pushes = [dict(c.candidate.as_dict()) for c in design.pushes]
    assert record.recorded([*pushes, None]) == 2
    assert record.recorded(pushes[:1]) == 1
    moved = {**pushes[0], "lateral": pushes[0]["lateral"] + 0.01}
    assert record.recorded([moved]) == (1 if pushes[1] == moved else 0)
    path.write_text(json.dumps({"format": "sim2real.fit/1"}))
    with pytest.raises(DataError, match="not a design"):
        read_design_record(path)
    broken = design.as_dict()
    del broken["after"][-1]["contact.mu_table"]
    path.write_text(json.dumps(broken))
    with pytest.raises(DataError, match=r"'after' has no width for contact\.mu_table"):
        read_design_record(path)
