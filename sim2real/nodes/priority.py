"""Scheduling priority of one experiment run (``sim2real run``, ``sim2real demo``).

A run's processes have real-time duties: the driver's control loop streams a command every
10 ms, the stand-in emulates a controller that a real arm never starves, and the recorder must
keep up with about a thousand messages per second. On a busy machine the kernel shares the
cores among all runnable processes alike, so CPU-bound work beside a run delays its ticks (beside
four busy loops on two cores it ran as slow as 26 Hz instead of 100, and its pushes left the PD law's path). A robot
driver's usual answer is to ask for a higher priority and to say when it cannot have it (as
ros2_control's controller manager does for its real-time thread); so does a run here:

* :func:`raise_run_priority` lowers the calling thread's niceness to :data:`RUN_NICENESS` before
  the run starts its threads and child processes, which inherit it (the mirrored sim's process
  then adds :data:`~sim2real.nodes.run_children.SIM_NICENESS`, so it still yields to the real
  platform);
* :meth:`PriorityChange.restore` puts the caller's niceness back when the run ends (always allowed).

Lowering a niceness needs root, ``CAP_SYS_NICE`` or an ``RLIMIT_NICE`` allowance; without them
the run keeps its niceness, says so, and records each trial's loop health as before.

Linux keeps the niceness per thread: only the calling thread (and what it starts afterwards) is
changed, so call these from the thread that starts the run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

#: Niceness a run asks for: a CPU weight about 9 times that of an ordinary process (niceness 0),
#: leaving -11 to -20 to whatever an administrator ranks above a run.
RUN_NICENESS = -10


@dataclass(frozen=True)
class PriorityChange:
    """What :func:`raise_run_priority` did.

    Attributes
    ----------
    before : int
        The calling thread's niceness before the call.
    raised : bool
        Whether the niceness is now :data:`RUN_NICENESS`.
    message : str
        One line for the run's progress output: the priority the run has, and why (empty when
        the run did not ask for one).
    """

    before: int
    raised: bool
    message: str

    def restore(self) -> None:
        """Set the calling thread's niceness back to :attr:`before` (a no-op when it was not raised)."""
        if self.raised:
            os.setpriority(os.PRIO_PROCESS, 0, self.before)


def unchanged_priority() -> PriorityChange:
    """The :class:`PriorityChange` of a run that does not ask for a priority (nothing to say or restore)."""
    return PriorityChange(os.getpriority(os.PRIO_PROCESS, 0), False, "")


def raise_run_priority() -> PriorityChange:
    """Lower the calling thread's niceness to :data:`RUN_NICENESS` if it is higher and the OS allows it.

    Returns
    -------
    PriorityChange
        The niceness before, whether it was raised, and a line saying so. Never raises: without the
        privilege the run goes on at its niceness.
    """
    before = os.getpriority(os.PRIO_PROCESS, 0)
    if before <= RUN_NICENESS:
        return PriorityChange(before, False, f"the run keeps its scheduling priority (niceness {before})")
    try:
        os.setpriority(os.PRIO_PROCESS, 0, RUN_NICENESS)
    except PermissionError:
        return PriorityChange(before, False, (
            f"the run's processes keep niceness {before}: raising their priority needs root, CAP_SYS_NICE or "
            "an RLIMIT_NICE allowance; on a busy machine their control loop can be starved (each trial "
            "records its loop health)"))
    return PriorityChange(before, True, (
        f"the run's processes run at niceness {RUN_NICENESS} (from {before}): CPU-bound work beside them "
        "waits for the control loop"))
