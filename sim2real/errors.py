"""The exception types that user-facing commands turn into a one-line error and an exit status.

Every error of the toolkit is a :class:`Sim2RealError`; the kinds a caller may want to tell
apart are subclasses, each with the CLI's exit status for it (``exit_status``):

===========================  ======  ==========================================================
class                        status  meaning
===========================  ======  ==========================================================
:class:`Sim2RealError`       2       the root: bad input or an unrecoverable condition found
                                     before the work began; nothing was written
:class:`InputError`          2       a file, option or recording that cannot be used as given
                                     (what it lacks, where)
:class:`DataError`           2       a recording or data file that cannot be read or is not
                                     what its format says
:class:`SolverError`         2       the simulator could not solve a step as asked (the message
                                     names the step)
:class:`HardwareFaultError`  4       the real arm or its link faulted during a run (stall,
                                     latency, controller error); the arm was stopped, what was
                                     recorded is kept
:class:`RunFailedError`      5       a run started and could not finish for another reason (a
                                     node process died, a timeout); what was recorded is kept
===========================  ======  ==========================================================

An interrupted command (Ctrl-C) exits 130, SIGTERM 143; a result that is written but degraded
or partial exits 3 and says so.
"""


class Sim2RealError(Exception):
    """Bad user input or an unrecoverable condition, explained in one line.

    The CLI prints ``sim2real: error: <message>`` and exits with ``exit_status`` (2).
    Messages name the offending item (file, parameter, key, quantity) and the reason in the
    library's own words, never a CLI flag: ``option`` says which option sets the quantity, and
    the CLI prefixes that option's flag (``sim2real: error: --set-grid: <message>``) when the
    command it runs has one.

    Parameters
    ----------
    message : str
        The explanation, one line; ``str(err)`` is this message.
    option : str, optional
        The argparse ``dest`` of the command-line option that sets the quantity the message is
        about (``"set_grid"``, ``"bounds"``, ``"frames"``, ``"tool_offset"``): a plain key with no
        dashes. None (the default) when no option sets it.
    see : sequence of str, optional
        The dests of the options that set what the message asks to check, in its order (a scene
        check's frame transform, box offset and size, and the option that imports anyway): the CLI
        ends the line with their flags (``(see --transform, --box-offset, --force)``), those the command has.

    Attributes
    ----------
    option : str or None
        The ``option`` given.
    see : tuple of str
        The ``see`` given.
    """

    exit_status = 2

    def __init__(self, message: str, *, option: str | None = None, see: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.option = option
        self.see = tuple(see)


class InputError(Sim2RealError):
    """Input that cannot be used as given: a trial without what a mode needs, an unreachable pose, ..."""


class DataError(Sim2RealError):
    """A recording or data file that cannot be read, or is not what its format says."""


class SolverError(Sim2RealError):
    """The simulator could not solve a step as asked (strict mode, non-finite problem data)."""


class RunFailedError(Sim2RealError):
    """A run that had started could not finish (a node died, a timeout); its recordings are kept."""

    exit_status = 5


class HardwareFaultError(RunFailedError):
    """The real arm or its link faulted during a run; the arm was stopped and stays stopped."""

    exit_status = 4
