"""``sim2real --help`` lists every built subcommand and each has its own ``--help``."""

import argparse
import subprocess
import sys

import pytest
from children import HANG_GUARD_S

from sim2real.cli import build_parser

SUBCOMMANDS = sorted(
    name
    for action in build_parser()._actions
    if isinstance(action, argparse._SubParsersAction)
    for name in action.choices
)


def test_top_level_help_lists_every_subcommand():
    result = subprocess.run([sys.executable, "-m", "sim2real", "--help"], capture_output=True, text=True,
                            timeout=HANG_GUARD_S)
    assert result.returncode == 0
    for name in SUBCOMMANDS:
        assert name in result.stdout
    # DESIGN.md's command-line contract
    for name in ("demo", "run", "simulate", "replay", "fit", "report", "emulate-xarm", "import"):
        assert name in SUBCOMMANDS


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_each_subcommand_has_help(name, capsys):
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args([name, "--help"])
    assert done.value.code == 0
    assert "usage: sim2real" in capsys.readouterr().out


def test_no_subcommand_prints_help_and_fails():
    result = subprocess.run([sys.executable, "-m", "sim2real"], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert result.returncode == 2 and "COMMAND" in result.stdout


def test_the_parser_loads_no_engine():
    """``--help``, argument checks and one-line errors for bad input answer without the engines' libraries
    (numba's kernels, MuJoCo, SciPy): the registry names engines without importing them."""
    code = ("import sys; from sim2real.cli import build_parser; build_parser(); "
            "print(sorted(m for m in ('numba', 'mujoco', 'scipy', 'sim2real.physics') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
