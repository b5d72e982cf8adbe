"""Progress of long commands: a bar redrawn in place on a terminal, whole lines into a log."""

from __future__ import annotations

import io

from sim2real.cli.progress import progress_bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_into_a_log_every_status_is_a_line_of_its_own_and_the_last_one_says_done() -> None:
    log = io.StringIO()
    with progress_bar(40, "sweep", "row", interval=0.0, initial=10, stream=log) as bar:
        for _ in range(30):
            bar.update()
    text = log.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[0].startswith("sweep:") and "10/40" in lines[0]
    assert "40/40" in lines[-1] and "100%" in lines[-1]


def test_on_a_terminal_the_bar_is_redrawn_in_place() -> None:
    terminal = _Terminal()
    with progress_bar(5, "import", "toss", stream=terminal) as bar:
        for _ in range(5):
            bar.update()
    assert "\r" in terminal.getvalue() and "5/5" in terminal.getvalue()
