"""``python -m sim2real`` and the ``sim2real`` console script: the command-line interface.

Ctrl-C may land while the interface's own modules are still being imported (a second or more on a
busy machine), before :func:`sim2real.cli.main` has set up its handling: that too ends in the one line
``sim2real: interrupted`` and exit status 130, as it does later, also when a second Ctrl-C follows the
first while it is being handled.
"""

import signal
import sys


def main() -> int:
    """Import the command-line interface and run it on ``sys.argv``; returns the exit status."""
    try:
        from sim2real.cli import main as run_cli
    except BaseException as err:
        if not _stopped(err):
            raise
        print("sim2real: interrupted", file=sys.stderr)
        return 130
    return run_cli()


def _stopped(err: BaseException) -> bool:
    """Whether ``err``, which ended the interface's import, is an interrupt; SIGINT is ignored from here on
    when it is (a second Ctrl-C landing while this decides still counts as the stop)."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        from sim2real.interrupts import is_interrupt

        stopped = is_interrupt(err)  # (also as Python wraps one inside an imported class body)
    except KeyboardInterrupt:
        return True
    if not stopped:
        signal.signal(signal.SIGINT, previous)
    return stopped


if __name__ == "__main__":
    sys.exit(main())
