"""The one exception type that user-facing commands turn into a one-line error."""


class Sim2RealError(Exception):
    """Bad user input or an unrecoverable condition, explained in one line.

    The CLI prints ``sim2real: error: <message>`` and exits with status 2.
    Messages name the offending item (file, parameter, key) and the reason.
    """
