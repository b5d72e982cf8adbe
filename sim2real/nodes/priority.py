"""Scheduling priority of the nodes with a real-time duty.

The real platform's node runs the PD loop and the driver's watchdog on wall-clock budgets (the
controller stops the arm by itself when no command came for 100 ms), and the reality stand-in
emulates a controller, which on a real arm is a computer of its own. On a busy machine the
kernel's fair scheduler gives each runnable process an equal share, so four CPU-bound neighbours
on two cores kept these processes off a CPU for more than 100 ms now and then: the arm stopped
itself (``auto_stop``) and the experiment failed, or the loop read the arm too sparsely for its
recording to be played back.

These nodes therefore ask, before any thread starts (threads inherit it), for a lower niceness
(:data:`REALTIME_NICENESS`): under the fair scheduler a nice -10 process weighs about nine times a
nice-0 one, and it is woken ahead of them. Lowering the niceness needs root or ``CAP_SYS_NICE``
(or an ``RLIMIT_NICE`` from ``/etc/security/limits.conf``); without it the node says so in one
line and runs as before. A real-time scheduling class (``SCHED_FIFO``, which ``ros2_control``'s
controller manager asks for) was not chosen: a Python process in it that spun by mistake would
take a whole core from everything else, while a niceness only shifts shares. The mirrored
simulator goes the other way (``nice`` 5, :data:`sim2real.nodes.run_children.SIM_NICENESS`).
"""

from __future__ import annotations

import contextlib
import os
import threading

#: Niceness the real-time nodes ask for (-20 highest priority, 0 the default, 19 lowest).
REALTIME_NICENESS = -10
#: Nodes with a real-time duty: the real platform's control node and the controller stand-ins.
REALTIME_NODES = frozenset({"xarm_node", "ros2_control_arm", "standin_world", "ros2_control_standin"})


def raise_priority(niceness: int = REALTIME_NICENESS) -> str | None:
    """Lower this process's niceness to ``niceness`` unless it is already that low or lower.

    On Linux a niceness belongs to a thread and new threads inherit their creator's: call it
    before the node's threads start; threads already running (started at import) are set too.

    Parameters
    ----------
    niceness : int
        Target niceness (-20 to 19).

    Returns
    -------
    str or None
        None when the process now runs at ``niceness`` or lower; otherwise one sentence saying why
        not (for the node to print once).
    """
    current = os.getpriority(os.PRIO_PROCESS, 0)
    if current <= niceness:
        return None
    try:
        os.setpriority(os.PRIO_PROCESS, 0, niceness)
        for thread in _other_threads():  # started at import (e.g. a BLAS pool): they inherited the old one
            with contextlib.suppress(ProcessLookupError):  # a thread that just ended
                os.setpriority(os.PRIO_PROCESS, thread, niceness)
    except OSError as err:
        return (f"could not raise its scheduling priority to nice {niceness} ({err.strerror or err}); it runs at "
                f"nice {current}, and on a busy machine its loop may miss ticks (give it CAP_SYS_NICE or an "
                "RLIMIT_NICE, see docs/safety.md)")
    return None


def _other_threads() -> list[int]:
    """Thread ids of this process other than the calling thread (Linux: ``/proc/self/task``; none elsewhere)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return []
    return [int(task) for task in tasks if int(task) != threading.get_native_id()]
