"""Ctrl-C that Python hands back wrapped in another exception is still an interrupt: one line, exit 130.

A KeyboardInterrupt raised inside a descriptor's ``__set_name__`` while a class body runs (numba's
``CFGraph`` uses ``cached_property``: a Ctrl-C during numba's import can land there) comes out as
``RuntimeError: Error calling __set_name__`` with the interrupt as its cause. A fresh clone's CI met it
0.6 s into ``replay``'s start-up and printed that traceback. Here the same wrapping is made on purpose,
at once, so the handling is checked every time rather than when the timing happens to hit it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import sim2real.cli as cli
from sim2real.interrupts import is_interrupt

ROOT = Path(__file__).resolve().parents[2]


class _InterruptedAtNaming:
    """A descriptor whose ``__set_name__`` is hit by Ctrl-C (it raises KeyboardInterrupt)."""

    def __set_name__(self, owner: type, name: str) -> None:
        raise KeyboardInterrupt


def _class_body_hit_by_ctrl_c() -> None:
    """Run a class body whose descriptor is interrupted while it is named (Python wraps the interrupt)."""

    class _Graph:  # the class body is the point
        attribute = _InterruptedAtNaming()


def test_python_wraps_an_interrupt_in_a_class_body_and_it_is_still_told_from_a_failure() -> None:
    with pytest.raises(RuntimeError) as raised:
        _class_body_hit_by_ctrl_c()
    assert isinstance(raised.value.__cause__, KeyboardInterrupt)  # how CPython 3.11 reports it
    assert is_interrupt(raised.value)
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("the clean-up of an interrupt failed")  # noqa: B904 - a context, not a cause
    except RuntimeError as err:
        assert not is_interrupt(err)  # a failure while handling an interrupt is shown as a failure
    assert not is_interrupt(ValueError("not an interrupt"))


def test_the_cli_turns_a_wrapped_interrupt_into_one_line_and_130(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "_run", lambda argv: _class_body_hit_by_ctrl_c())
    assert cli.main(["replay", "--help"]) == 130
    assert capsys.readouterr().err == "sim2real: interrupted\n"


def test_the_cli_still_shows_a_real_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(argv: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "_run", fails)
    with pytest.raises(RuntimeError, match="a bug"):
        cli.main(["replay", "--help"])


def test_a_wrapped_interrupt_while_the_interface_imports_is_one_line_and_130(tmp_path: Path) -> None:
    """``python -m sim2real``: the same wrapping while ``sim2real.cli`` itself is being imported."""
    code = ("import sys, runpy\n"
            "class _D:\n"
            "    def __set_name__(self, owner, name): raise KeyboardInterrupt\n"
            "class _Finder:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'sim2real.cli':\n"
            "            class _Graph:\n"
            "                attribute = _D()\n"
            "        return None\n"
            "sys.meta_path.insert(0, _Finder())\n"
            "sys.argv = ['sim2real', '--help']\n"
            "runpy.run_module('sim2real', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=60, check=False)
    assert done.returncode == 130, done.stderr
    assert done.stderr == "sim2real: interrupted\n"
