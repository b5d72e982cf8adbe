"""``python -m sim2real`` and the ``sim2real`` console script: the command-line interface.

Ctrl-C may land while the interface's own modules are still being imported (a second or more on a
busy machine), before :func:`sim2real.cli.main` has set up its handling: that too ends in the one line
``sim2real: interrupted`` and exit status 130, as it does later.
"""

import sys


def main() -> int:
    """Import the command-line interface and run it on ``sys.argv``; returns the exit status."""
    from sim2real.interrupts import is_interrupt

    try:
        from sim2real.cli import main as run_cli
    except BaseException as err:
        if not is_interrupt(err):
            raise
        print("sim2real: interrupted", file=sys.stderr)
        return 130
    return run_cli()


if __name__ == "__main__":
    sys.exit(main())
