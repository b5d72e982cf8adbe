"""The rule by which the stand-in tests make a run again (``tests/standin_runs.py``): only a recording that a
starved loop cut, never a degraded, failed or unexplained incomplete one."""

from __future__ import annotations

import standin_runs

STARVED = "STARVED trial_00_d0.300 real: control loop at 31 Hz of 100 Hz, 27 late ticks"
CUT = "INCOMPLETE trial_00_d0.300: recording incomplete: real/box_pose has a 0.26 s hole"


def test_a_clean_or_only_starved_run_is_recorded() -> None:
    assert standin_runs.recorded(0, "wrote 1 trial\n")
    assert standin_runs.recorded(3, f"{STARVED}\n")
    assert not standin_runs.recorded(3, f"{STARVED}\n{CUT}\n")
    assert not standin_runs.recorded(1, "")


def test_only_an_incomplete_trial_whose_loop_starved_is_made_again() -> None:
    assert standin_runs.cut_by_load(3, f"{STARVED}\n{CUT}\n")
    assert not standin_runs.cut_by_load(3, f"{CUT}\n")  # incomplete without a starved loop: a fault to see
    assert not standin_runs.cut_by_load(3, f"{STARVED.replace('00_d0.300', '01_d0.450')}\n{CUT}\n")
    assert not standin_runs.cut_by_load(3, f"{STARVED}\n{CUT}\nDEGRADED trial_00_d0.300: 2 degraded steps\n")
    assert not standin_runs.cut_by_load(1, f"{STARVED}\n{CUT}\n")
    assert not standin_runs.cut_by_load(3, f"{STARVED}\n")


def test_a_run_a_starvation_fault_stopped_is_made_again_and_no_other_fault() -> None:
    stall = "sim2real: error: stopped: the xArm link stalled: no reply to get_joint_states 108 ms after ..."
    assert standin_runs.stopped_by_load(4, stall)
    assert not standin_runs.stopped_by_load(4, "sim2real: error: stopped: the xArm reported error 22 (self-collision)")
    assert not standin_runs.stopped_by_load(2, stall)
    attempts: list[int] = []

    def run(number: int) -> tuple[int, str, str]:
        attempts.append(number)
        return (4, "", stall) if number == 1 else (0, "wrote 1 trial\n", "")

    assert standin_runs.until_recorded(run, lambda result: result) == (0, "wrote 1 trial\n", "")
    assert attempts == [1, 2]
