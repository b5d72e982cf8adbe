"""Several nodes of the experiment graph in one process (a child process of ``sim2real run``).

    python -m sim2real.nodes.group [--ready-file F] [--parent-pid PID] NODE... --ros-args --params-file P.yaml

``NODE`` is a node name of the graph (:data:`NODE_NAMES`); each node reads its parameters
from the params file under its own name and under ``/**``, exactly as the console script
of the same node would. Each node spins on its own executor thread until SIGINT or SIGTERM,
which closes them in order (:func:`sim2real.nodes.process.run_nodes`); the ready file (if
given) is created once every node has been constructed. With ``--parent-pid`` the process
also ends that way when its parent dies, however it died (:func:`follow_parent`).

``sim2real run`` uses it to give the mirrored simulator and the reality stand-in their own
interpreters: their physics steps would otherwise hold the GIL of the real arm's control loop.
"""

from __future__ import annotations

import os
import signal
import sys

# The parent starts this interpreter with SIGINT ignored, so that a Ctrl-C in the terminal (which reaches
# every process of the group) during the interpreter's own start-up leaves no traceback; from here on a
# stop signal raises KeyboardInterrupt, which ``__main__`` below (while this module's imports run) and the
# nodes (once they run) turn into a quiet stop. So nothing above ``main`` imports more than this.
if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from typing import Any

#: Node names this module can start, with the module and class of each.
NODE_NAMES = ("sim_node", "sim_pd_controller", "xarm_node", "standin_world", "mocap_bridge", "ros2_control_arm",
              "ros2_control_standin", "live_view", "tag_detector")


def node_factory(name: str) -> Callable[..., Any]:
    """The constructor of node ``name`` (keyword arguments go to :class:`rclpy.node.Node`)."""
    if name == "sim_node":
        from sim2real.nodes.sim_node import SimNode

        return SimNode
    if name == "sim_pd_controller":
        from sim2real.nodes.pd_controller import PDControllerNode

        return lambda **kwargs: PDControllerNode(name, **kwargs)
    if name == "xarm_node":
        from sim2real.nodes.xarm_node import XArmNode

        return XArmNode
    if name == "standin_world":
        from sim2real.nodes.standin_world import StandinWorldNode

        return StandinWorldNode
    if name == "mocap_bridge":
        from sim2real.nodes.mocap_bridge import MocapBridgeNode

        return MocapBridgeNode
    if name == "tag_detector":
        from sim2real.nodes.tag_detector import TagDetectorNode

        return TagDetectorNode
    if name == "ros2_control_arm":
        from sim2real.nodes.ros2_control_arm import Ros2ControlArmNode

        return Ros2ControlArmNode
    if name == "ros2_control_standin":
        from sim2real.nodes.ros2_control_standin import Ros2ControlStandinNode

        return Ros2ControlStandinNode
    if name == "live_view":
        from sim2real.nodes.live_view import LiveViewNode

        return LiveViewNode
    raise ValueError(f"unknown node '{name}' (expected one of {', '.join(NODE_NAMES)})")


#: prctl option: the signal this process gets when its parent dies (Linux).
PR_SET_PDEATHSIG = 1


def follow_parent(parent_pid: int) -> bool:
    """Ask the kernel for SIGTERM when the parent dies (even by SIGKILL), so the nodes close and
    the arm stops instead of running on as an orphan. False when the parent is already gone.

    Parameters
    ----------
    parent_pid : int
        The process that started this one (checked after the request, which closes the race
        of a parent dying in between).
    """
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent's own handlers are all there is
        pass
    return os.getppid() == parent_pid


def _ready_signal(path: Path) -> Callable[[], None]:
    """What tells the parent that every node is built: create ``path``. When the parent's run directory
    is gone, the run was stopped meanwhile (the parent removes it as it ends): a stop, not an error."""
    def ready() -> None:
        try:
            path.touch()
        except FileNotFoundError:
            raise KeyboardInterrupt from None
    return ready


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: once the nodes ran, ends the process with its status (0 after SIGINT or SIGTERM, 2
    when a node cannot start as configured: one line on stderr, the parent reports the exit);
    returns 0 when the parent was already gone (nothing started)."""
    import argparse
    from pathlib import Path

    from sim2real.interrupts import redeliver_interrupts

    redeliver_interrupts()  # one that lands in a destructor while the nodes load is not lost either
    from sim2real.nodes.process import end_process, run_nodes, split_ros_args

    argv = list(sys.argv if argv is None else argv)
    own, _ = split_ros_args(argv)
    parser = argparse.ArgumentParser(prog="python -m sim2real.nodes.group")
    parser.add_argument("--ready-file", type=Path, default=None)
    parser.add_argument("--parent-pid", type=int, default=None,
                        help="end (as on SIGTERM: nodes closed, the arm stopped) when this process dies")
    parser.add_argument("nodes", nargs="+", choices=NODE_NAMES)
    args = parser.parse_args(own)
    if args.parent_pid is not None and not follow_parent(args.parent_pid):
        return 0  # the parent is already gone: start nothing
    # The physics thread and the DDS callbacks share the GIL with the emulator's socket
    # threads: hand it over every 0.5 ms instead of 5 ms so that replies are not held up.
    sys.setswitchinterval(0.0005)
    ready = _ready_signal(args.ready_file) if args.ready_file is not None else None
    end_process(run_nodes([node_factory(name) for name in args.nodes], argv, "sim2real.nodes.group", ready=ready))


#: Exit status of a group stopped by a signal before its nodes were built (128 + SIGINT, as a shell says).
STOPPED_AT_START = 130


def end_stopped_start(err: BaseException) -> None:
    """End the process quietly (:data:`STOPPED_AT_START`) when ``err``, which escaped :func:`main` before
    the nodes took the stop over, is an interrupt; return (for the caller to raise it) otherwise.

    A second stop signal may follow the first at once: Ctrl-C reaches every process of the group and the
    parent then stops its children with SIGINT too. From here on SIGINT is ignored, and one landing before
    that (while :func:`sim2real.interrupts.is_interrupt` is imported or runs) still counts as the stop.
    """
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        from sim2real.interrupts import is_interrupt  # light; imported only here, as said above

        stopped = is_interrupt(err)  # (also as Python wraps one inside an imported class body)
    except KeyboardInterrupt:
        stopped = True
    if stopped:
        os._exit(STOPPED_AT_START)  # nothing started: no traceback, no finalization; the parent reports the stop


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BaseException as err:  # SIGINT or SIGTERM while importing, before the nodes could take the stop over
        try:
            end_stopped_start(err)
        except KeyboardInterrupt:  # the second stop landed as that function began
            os._exit(STOPPED_AT_START)
        raise
