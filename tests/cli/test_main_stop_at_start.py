"""``python -m sim2real`` stopped while the interface still imports: one line and 130, also when a second
Ctrl-C follows the first while it is handled."""

from __future__ import annotations

import builtins
import signal
from collections.abc import Iterator

import pytest

import sim2real.__main__ as entry
import sim2real.interrupts


@pytest.fixture
def failing_import(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[BaseException]]:
    """``from sim2real.cli import main`` raises what the test puts in the list; SIGINT's handler is restored."""
    raised: list[BaseException] = []
    real_import = builtins.__import__

    def imports(name: str, *args: object, **kwargs: object) -> object:
        if name == "sim2real.cli" and raised:
            raise raised[0]
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", imports)
    previous = signal.getsignal(signal.SIGINT)
    yield raised
    signal.signal(signal.SIGINT, previous)


def test_an_interrupt_during_the_import_is_one_line_and_130(failing_import: list[BaseException],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    failing_import.append(KeyboardInterrupt())
    assert entry.main() == 130
    assert capsys.readouterr().err == "sim2real: interrupted\n"
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_a_second_interrupt_while_deciding_is_still_the_stop(failing_import: list[BaseException],
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(err: BaseException) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(sim2real.interrupts, "is_interrupt", interrupted)
    failing_import.append(KeyboardInterrupt())
    assert entry.main() == 130
    assert capsys.readouterr().err == "sim2real: interrupted\n"


def test_a_failed_import_is_raised_and_ctrl_c_is_left_as_it_was(failing_import: list[BaseException]) -> None:
    before = signal.getsignal(signal.SIGINT)
    failing_import.append(ImportError("no module named x"))
    with pytest.raises(ImportError):
        entry.main()
    assert signal.getsignal(signal.SIGINT) == before
