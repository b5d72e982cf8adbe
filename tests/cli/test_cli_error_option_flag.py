"""A library error names its quantity and says which option sets it (``option``, the argparse dest); the CLI
prefixes the chosen subcommand's flag for that dest (``sim2real: error: --set-grid: ...``), found from the parser
itself, and prints the plain message when the subcommand has no such option."""

from __future__ import annotations

import argparse
import pickle
from collections.abc import Callable
from pathlib import Path

import pytest

from sim2real import cli
from sim2real.errors import DataError, InputError, RunFailedError, Sim2RealError
from sim2real.sysid.problem.runs import TrialFailure, raise_all_failed


def _every_parser(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every subcommand's parser under it (``import bag`` too)."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.extend(_every_parser(sub))
    return found


@pytest.fixture
def raising(monkeypatch: pytest.MonkeyPatch) -> Callable[[Sim2RealError], None]:
    """Make every command's handler raise the given error (the real parsers otherwise)."""

    def use(error: Sim2RealError) -> None:
        build = cli.build_parser

        def handler(args: argparse.Namespace) -> int:
            raise error

        def parser() -> argparse.ArgumentParser:
            top = build()
            for sub in _every_parser(top)[1:]:
                sub.set_defaults(handler=handler, uses_engine=False)
            return top

        monkeypatch.setattr(cli, "build_parser", parser)

    return use


@pytest.mark.parametrize(("argv", "error", "expected"), [
    (["sweep", "--distances", "0.3", "--out", "sw"], InputError("the parameter grid names a parameter twice",
                                                              option="grid"),
     "sim2real: error: --set-grid: the parameter grid names a parameter twice"),
    (["params"], InputError("a parameter override expects NAME=VALUE, got 'box.mass'", option="overrides"),
     "sim2real: error: --set: a parameter override expects NAME=VALUE, got 'box.mass'"),
    (["import", "csv", "rec.csv", "--out", "run"], DataError("frames file f.yaml: not a frames file",
                                                             option="frames"),
     "sim2real: error: --frames: frames file f.yaml: not a frames file"),
    (["import", "bag", "b.mcap", "--box-pose", "/box", "--out", "run"],
     InputError("the tool offset '1,2': expected x,y,z", option="tool_offset"),
     "sim2real: error: --tool-offset: the tool offset '1,2': expected x,y,z"),
])
def test_a_library_error_with_an_option_gets_the_subcommands_flag(raising, capsys, argv, error, expected) -> None:
    raising(error)
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == expected + "\n" and captured.out == ""


@pytest.mark.parametrize(("argv", "option"), [
    (["params"], "no_such_option"),  # no option of any command
    (["params"], "grid"),  # sweep's --set-grid: not an option of params
    (["import", "cube-toss", "--out", "t"], "frames"),  # import bag's and csv's --frames: not cube-toss's
    (["params"], None),
])
def test_an_unknown_option_prints_the_plain_message(raising, capsys, argv, option) -> None:
    raising(InputError("the parameter grid names a parameter twice", option=option))
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == "sim2real: error: the parameter grid names a parameter twice\n"


def test_the_options_to_check_end_the_line_with_the_flags_the_command_has(raising, capsys) -> None:
    raising(InputError("the box floats; check the frame transform and the box's size, or import it flagged",
                       see=("transform", "box_size", "frames_of_nothing", "force")))
    assert cli.main(["import", "csv", "rec.csv", "--out", "run"]) == 2
    assert capsys.readouterr().err == ("sim2real: error: the box floats; check the frame transform and the box's "
                                       "size, or import it flagged (see --transform, --box-size, --force)\n")
    raising(InputError("the box floats; check the frame transform and the box's size, or import it flagged",
                       see=("transform", "box_size")))
    assert cli.main(["params"]) == 2  # no such options: the message alone
    assert capsys.readouterr().err == ("sim2real: error: the box floats; check the frame transform and the box's "
                                       "size, or import it flagged\n")


def test_the_exit_status_stays_the_kinds(raising, capsys) -> None:
    raising(RunFailedError("a node process died", option="timeout"))
    assert cli.main(["run", "--mode", "sim", "--out", "r"]) == 5
    assert capsys.readouterr().err == "sim2real: error: --timeout: a node process died\n"


def test_a_real_library_error_is_prefixed_end_to_end(tmp_path: Path, capsys) -> None:
    (tmp_path / "rec.csv").write_text("t,box_x,box_y,box_z,box_qw,box_qx,box_qy,box_qz\n0,0.4,0,0.05,1,0,0,0\n")
    out = tmp_path / "run"
    assert cli.main(["import", "csv", str(tmp_path / "rec.csv"), "--split", "bogus", "--out", str(out)]) == 2
    assert capsys.readouterr().err == ("sim2real: error: --split: the split 'bogus': expected none, gaps:SECONDS or "
                                       "windows:FILE\n")
    assert not out.exists()


def test_the_option_is_keyword_only_and_crosses_processes() -> None:
    err = InputError("the free parameters name no parameter to fit", option="free")
    assert str(err) == "the free parameters name no parameter to fit" and err.option == "free"
    assert Sim2RealError("plain").option is None
    with pytest.raises(TypeError):
        Sim2RealError("message", "free")  # type: ignore[misc]
    copy = pickle.loads(pickle.dumps(err))  # a worker's error, as the executors return it
    assert type(copy) is InputError and str(copy) == str(err) and copy.option == "free"


def test_trial_failures_keep_the_option() -> None:
    with pytest.raises(InputError) as one:
        raise_all_failed([TrialFailure("t1", "trial 't1': no joint commands", option="mode")], "no trial can be fitted")
    assert one.value.option == "mode"
    with pytest.raises(InputError) as mixed:
        raise_all_failed([TrialFailure("t1", "r1", option="mode"), TrialFailure("t2", "r2", option="pusher")],
                         "no trial can be fitted")
    assert mixed.value.option is None  # the failures disagree: no flag is the one to blame
