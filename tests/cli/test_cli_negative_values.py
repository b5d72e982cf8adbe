"""Option values that start with a negative number are values: ``--transform -0.1,0,0,1,0,0,0`` is a frame,
not an unknown option (argparse alone takes only plain negative numbers as values and said "expected one
argument")."""

from __future__ import annotations

import pytest

from sim2real.cli import build_parser, main


def test_comma_lists_that_start_negative_are_option_values() -> None:
    args = build_parser().parse_args(["import", "csv", "rec.csv", "--transform", "-0.1,0,0,1,0,0,0",
                                      "--tool-offset", "-4e-3,-0.006,0.12", "--box-offset", "-.01,0,0",
                                      "--out", "runs/x"])
    assert args.transform == "-0.1,0,0,1,0,0,0"
    assert args.tool_offset == "-4e-3,-0.006,0.12"
    assert args.box_offset == "-.01,0,0"


@pytest.mark.parametrize("value", ["-x,0,0", "--out"])
def test_what_is_no_number_is_still_an_option(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["import", "csv", "rec.csv", "--transform", value, "--out", "runs/x"])
    assert raised.value.code == 2
    assert "argument --transform: expected one argument" in capsys.readouterr().err
