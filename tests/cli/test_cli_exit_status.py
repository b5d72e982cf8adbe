"""Errors by kind: each layer's error class is a Sim2RealError (one line on stderr) with its exit status."""

from __future__ import annotations

import argparse

import pytest

from sim2real import cli
from sim2real.errors import (
    DataError,
    HardwareFaultError,
    InputError,
    RunFailedError,
    Sim2RealError,
    SolverError,
)
from sim2real.model.ik import UnreachableError
from sim2real.sim.errors import SimulationError
from sim2real.sysid.problem.inputs import TrialInputError


@pytest.mark.parametrize(("error", "status"), [
    (Sim2RealError, 2), (InputError, 2), (DataError, 2), (SolverError, 2),
    (HardwareFaultError, 4), (RunFailedError, 5),
])
def test_the_cli_exits_with_the_status_of_the_error_kind(monkeypatch, capsys, error, status) -> None:
    def handler(args: argparse.Namespace) -> int:
        raise error("what happened, in one line")

    class Parser:
        def parse_args(self, argv: list[str]) -> argparse.Namespace:
            return argparse.Namespace(handler=handler, uses_engine=False)

    monkeypatch.setattr(cli, "build_parser", Parser)
    assert cli.main(["params"]) == status
    assert capsys.readouterr().err == "sim2real: error: what happened, in one line\n"


def test_each_layers_errors_are_of_their_kind() -> None:
    assert issubclass(SimulationError, SolverError) and issubclass(TrialInputError, InputError)
    assert issubclass(UnreachableError, InputError) and issubclass(HardwareFaultError, RunFailedError)
    for kind in (InputError, DataError, SolverError, RunFailedError):
        assert issubclass(kind, Sim2RealError)
