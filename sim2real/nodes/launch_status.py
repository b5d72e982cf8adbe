"""A launch's exit status follows its experiment's (``launch/*.launch.py``).

``ros2 launch`` returns 0 after a ``Shutdown`` action whatever the processes' statuses were.
The launch files give the experiment node :func:`experiment_exited` as its ``on_exit``
handler: when the experiment recorded every trial (status 0) it shuts the launch down; when
it failed (1) or was stopped before its trials were done (130, e.g. another required node died
and the launch stopped it), the handler raises, which ``LaunchService`` logs as one error line
and turns into a non-zero exit status of ``ros2 launch`` while it shuts every process down.
``sim2real run`` is the wrapper with the finer statuses (2, 3, 4, 5, 130; see its ``--help``).
"""

from __future__ import annotations

from typing import Any


class ExperimentFailedError(RuntimeError):
    """The experiment node exited before recording every trial; the launch exits non-zero."""


def experiment_exited(event: Any, context: Any) -> list[Any]:
    """``on_exit`` handler of the experiment node (a ``launch.events.process.ProcessExited``).

    Returns
    -------
    list
        ``[Shutdown(...)]`` when the experiment exited 0 (every trial recorded).

    Raises
    ------
    ExperimentFailedError
        The experiment exited with any other status.
    """
    from launch.actions import Shutdown

    status = getattr(event, "returncode", None)
    if status != 0:
        raise ExperimentFailedError(f"the experiment node exited with status {status} before recording every trial; "
                               "see its log above")
    return [Shutdown(reason="the experiment recorded every trial")]
