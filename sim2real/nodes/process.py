"""A node process: its command line (``--help``, ROS 2 arguments), running its nodes, stopping them.

Every node script's ``main()`` goes through :func:`run_node` (one node) and the node groups of a run
through :func:`run_nodes` (several in one process); both end the same way: closed in order on a
signal, the arm stopped, and within :data:`CLOSE_DEADLINE_S` of the stop whatever hangs; the process
then ends at once (:func:`end_process`).
:func:`spin_until_finished` also serves the run's own process (:mod:`sim2real.nodes.runner`).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import signal
import sys
import textwrap
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from rclpy.node import Node

from sim2real.errors import Sim2RealError
from sim2real.nodes.common import ensure_localhost
from sim2real.paths import read_text_file
from sim2real.process_deadline import end_after

#: The end of every node script's ``--help``: how its parameters are given.
PARAMETERS_HELP = """\
Giving parameters (ROS 2 arguments, after --ros-args):
  --params-file FILE   a ROS 2 params YAML; its key is the node name ({name}:) or /** (every
                       node), then ros__parameters:, then the values; nested maps give dotted
                       names (pd: {{kp: 40.0}} is pd.kp). A node-name key beats -p.
  -p NAME:=VALUE       one parameter, e.g. -p {example}
  -r __node:=NAME      run under another node name (the params file key changes with it)
Types are strict: a float parameter needs 50.0, not 50.
{sim_params}
Example:
  {name} --ros-args --params-file config/params.yaml -p {example}

Exit status: 0 when done or stopped with Ctrl-C (SIGINT) or SIGTERM; 1 when the node's work
failed; 2 for a bad argument or configuration (one line on stderr); 124 when closing hung and
the process ended itself 10 s after the stop (every thread's stack on stderr).
"""
SIM_PARAMETERS_HELP = (
    "The simulator parameters (dotted names such as box.mass, pd.kp, sim.dt; SI units) are read\n"
    "from the same params file: `sim2real params` lists each one with its unit, bounds and meaning,\n"
    "and config/params.yaml holds the nominal values (`sim2real fit` writes files of that form).\n")
#: Errors that mean the node cannot start as configured (bad parameter, missing file, no
#: controller): one line on stderr and exit status 2, not a traceback.
CONFIG_ERRORS: tuple[type[BaseException], ...] = (Sim2RealError, ValueError, OSError)


class _OneLineParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line plus exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def split_ros_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(own, ros)``: a node script's own arguments and its ROS 2 arguments (``argv[0]`` excluded).

    ROS arguments run from each ``--ros-args`` to the next ``--`` or the end, as rcl reads them.
    """
    own: list[str] = []
    ros: list[str] = []
    inside = False
    for arg in list(argv)[1:]:
        if arg == "--ros-args":
            inside = True
        elif inside and arg == "--":
            inside = False
        elif inside:
            ros.append(arg)
        else:
            own.append(arg)
    return own, ros


def _one_line(text: str) -> str:
    """``text`` on one line, without rcl's source locations (``, at /src/rcl/arguments.c:356``)."""
    text = re.sub(r",? at /\S+\.(?:c|cpp|h|hpp):\d+", "", str(text))
    return " ".join(text.split())


def check_ros_args(argv: Sequence[str]) -> None:
    """Refuse unusable ROS 2 arguments before ROS starts, in one line.

    Every ``--params-file`` must be a readable UTF-8 file (rcl would otherwise fail with a
    multi-line parser error), and rcl must accept the arguments.

    Raises
    ------
    Sim2RealError
        A params file that is missing or unreadable, or arguments rcl rejects.
    """
    from rclpy.utilities import remove_ros_args

    _, ros = split_ros_args(argv)
    for index, flag in enumerate(ros):
        if flag == "--params-file":
            if index + 1 == len(ros):
                raise Sim2RealError("--params-file needs a file name")
            read_text_file(ros[index + 1], "params file")
    try:
        remove_ros_args(list(argv))
    except RuntimeError as err:  # RCLError, UnknownROSArgsError
        raise Sim2RealError(f"bad ROS arguments: {_one_line(str(err))}") from None


def node_usage(name: str, doc: str, example: str, sim_params: bool) -> argparse.ArgumentParser:
    """The argument parser of node script ``name``: ``--help`` shows ``doc`` (the node module's
    docstring) and how to give parameters; it accepts no other argument of its own."""
    description = textwrap.dedent(doc or "").strip()
    description = re.sub(r":\w+:`~(?:[\w.]+\.)?(\w+)`", r"\1", description)  # Sphinx roles, as rendered
    description = re.sub(r":\w+:`([\w.]+)`", r"\1", description)
    description = re.sub(r"::$", ":", description.replace("``", "`"), flags=re.MULTILINE)
    epilog = PARAMETERS_HELP.format(name=name, example=example or "name:=value",
                                    sim_params=SIM_PARAMETERS_HELP if sim_params else "")
    return _OneLineParser(prog=name, description=description, epilog=epilog,
                          usage="%(prog)s [-h] [--ros-args [--params-file FILE] [-p NAME:=VALUE] ...]",
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def run_node(factory: Callable[[], Node], args: Sequence[str] | None = None, *, name: str, doc: str | None,
             example: str = "", sim_params: bool = False) -> int:
    """Console-script main of one node: arguments, start, spin, and a clean stop.

    * ``--help`` prints ``doc`` and how to give parameters, and exits 0 without starting ROS;
      any argument of the script's own (outside ``--ros-args``) is a one-line error, status 2;
    * a missing or unreadable params file, arguments rcl rejects, or a node that cannot be built
      as configured (:data:`CONFIG_ERRORS`, rclpy's parameter errors): one line
      ``<name>: error: ...`` on stderr, status 2;
    * Ctrl-C (SIGINT) or SIGTERM: the node is closed (``close()``, e.g. the arm stopped, the open
      trial closed) while ROS is still up, then ROS shuts down; status 0, no traceback (a node
      stopped before its ``finished`` event and declaring ``stopped_status``: that status);
    * otherwise the node spins until its ``finished`` event (if it has one) is set; the status is
      then its ``exit_status`` (0 when absent).

    Once ROS was started, the process ends with that status (:func:`end_process`) instead of
    returning; the command-line errors before that return their status.

    Parameters
    ----------
    factory : callable
        Builds the node (after ``rclpy.init``).
    args : sequence of str, optional
        The whole command line, program name first (default ``sys.argv``).
    name : str
        The script's name (``--help``, error messages).
    doc : str
        What the node does and its parameters with units (the node module's docstring).
    example : str
        A ``name:=value`` for the help's example.
    sim_params : bool
        The node reads the simulator parameters (the help says where they are listed).
    """
    argv = list(sys.argv if args is None else args)
    own, _ = split_ros_args(argv)
    node_usage(name, doc or "", example, sim_params).parse_args(own)  # --help: exit 0; unknown: exit 2
    try:
        check_ros_args(argv)
    except Sim2RealError as err:
        return config_error(name, err)
    end_process(run_nodes([factory], argv, name))


def end_process(status: int) -> NoReturn:
    """End this node process now with ``status``, without the interpreter's finalization.

    For after :func:`run_nodes`: the nodes are closed (the arm stopped, the trials written), ROS is
    shut down (its log files flushed) and every thread left is a daemon. Finalization would only
    free memory and run the destructors of Python modules and native libraries (Fast DDS, rcl,
    LLVM), touching code that may first be read back from disk, and no Python thread can bound it
    then (daemon threads stop, :data:`CLOSE_DEADLINE_S` relies on the interval timer). A recorder
    stopped by SIGINT beside the stand-in graph exited 0.17 s after the signal in the median stop with
    finalization (one slow stop caught waiting for a page fault there), 0.03 s without.
    Python's logging and output streams are flushed first.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(status)


def config_error(name: str, err: BaseException) -> int:
    """Print ``<name>: error: <err>`` (one line) on stderr; return exit status 2."""
    print(f"{name}: error: {_one_line(str(err)) or type(err).__name__}", file=sys.stderr, flush=True)
    return 2


#: Closing the nodes (their threads, the arm's stop, the recorder's last trial) and shutting ROS down
#: take well under a second; a process still alive this long after its stop
#: (s) is stuck and ends itself (stacks on stderr): a killed parent must not leave a node running.
CLOSE_DEADLINE_S = 10.0
#: Exit status of a process ended by :data:`CLOSE_DEADLINE_S`.
CLOSE_DEADLINE_STATUS = 124


class _CloseDeadline:
    """:data:`CLOSE_DEADLINE_S` for one node process, started once (:meth:`arm`) at the earliest sign
    of its stop: the spinning ended (a signal, the work finished) or the start failed."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._armed = False

    def arm(self) -> None:
        if self._armed:
            return
        self._armed = True
        end_after(CLOSE_DEADLINE_S, CLOSE_DEADLINE_STATUS, f"{self._name}: the nodes are still closing "
                  f"{CLOSE_DEADLINE_S:g} s after the stop; ending the process now", name="close-deadline")


def _stop_signals_raise() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt in the main thread (also when SIGINT was
    inherited as ignored, as rclpy's own handler did): the nodes are then closed in order."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.default_int_handler)


def _stop_signals_exit(name: str) -> None:
    """While closing: a second SIGINT or SIGTERM ends the process at once (one line, 128 + signal)."""
    def exit_now(signum: int, frame: object) -> None:
        os.write(2, f"{name}: stopped again while closing; exiting now\n".encode())
        os._exit(128 + signum)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, exit_now)
        signal.signal(signal.SIGTERM, exit_now)


def run_nodes(factories: Sequence[Callable[[], Node]], argv: Sequence[str], name: str,
              ready: Callable[[], None] | None = None) -> int:
    """Init ROS (rclpy's signal handlers off), build the nodes, spin them, close them on a stop.

    rclpy's own SIGINT handler would shut the context down at once, under threads that still
    publish (the experiment's sequence, the driver's read loop): they then failed with
    ``publisher's context is invalid``. Here a stop signal raises KeyboardInterrupt in the main
    thread, the executors stop, each node's ``close()`` ends its threads while ROS is still up,
    and only then are the nodes destroyed and ROS shut down. It is the body of a node process:
    from the stop on (a signal, the parent's death, the work finished) the process ends within
    :data:`CLOSE_DEADLINE_S`, whatever hangs in it (then with status :data:`CLOSE_DEADLINE_STATUS`
    and every thread's stack on stderr).

    Parameters
    ----------
    factories : sequence of callables
        Each builds one node.
    argv : sequence of str
        Command line for ``rclpy.init`` (program name first).
    name : str
        For error messages.
    ready : callable, optional
        Called once every node is built.

    Returns
    -------
    int
        0 when stopped by a signal or finished; a single node's ``exit_status`` when it set
        ``finished``; 2 when a node could not start as configured (one line on stderr).
    """
    import rclpy
    from rclpy.exceptions import ParameterException
    from rclpy.signals import SignalHandlerOptions

    start_errors: tuple[type[BaseException], ...] = (*CONFIG_ERRORS, ParameterException, RuntimeError)
    deadline = _CloseDeadline(name)
    defaulted_range = not os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE")
    ensure_localhost(warn=False)  # said once the nodes run: an error stays one line
    _stop_signals_raise()
    nodes: list[Node] = []
    status = 0
    try:
        try:
            rclpy.init(args=list(argv), signal_handler_options=SignalHandlerOptions.NO)
            for factory in factories:
                nodes.append(factory())
        except start_errors as err:
            return config_error(name, err)
        if defaulted_range:
            nodes[0].get_logger().info("ROS_AUTOMATIC_DISCOVERY_RANGE was unset; using LOCALHOST "
                                       "(DDS stays on loopback)")
        freeze_heap()
        if ready is not None:
            ready()
        finished = getattr(nodes[0], "finished", None) if len(nodes) == 1 else None
        status = spin_until_finished(nodes, finished, on_stop=deadline.arm)
        status = _stopped_status(nodes, finished) if status == 130 else status
        if status == 0 and finished is not None and finished.is_set():
            status = int(getattr(nodes[0], "exit_status", 0))
    except KeyboardInterrupt:
        status = _stopped_status(nodes, getattr(nodes[0], "finished", None) if len(nodes) == 1 else None)
    finally:
        _stop_signals_exit(name)
        deadline.arm()
        close_nodes(nodes)
        rclpy.try_shutdown()
    return status


def _stopped_status(nodes: Sequence[Node], finished: threading.Event | None) -> int:
    """Status of a stop by signal: 0 (a stop is not a failure), except for a node with work to finish
    (``finished``) that was stopped before it finished and declares ``stopped_status`` (the
    experiment: its launch must not report success for trials that were never recorded)."""
    if finished is None or finished.is_set() or len(nodes) != 1:
        return 0
    return int(getattr(nodes[0], "stopped_status", 0))


def close_nodes(nodes: Sequence[Node]) -> None:
    """Call each node's ``close()`` (if it has one: stop hardware, close bags) and destroy it,
    last started first."""
    for node in reversed(list(nodes)):
        close = getattr(node, "close", None)
        if close is not None:
            close()
        node.destroy_node()


def freeze_heap() -> None:
    """Collect once and move every object alive now out of the garbage collector's reach.

    Call it once the nodes are built. A full (generation 2) collection scans every tracked object
    and holds the GIL meanwhile: with rclpy, the SDK, NumPy and the URDF model loaded it took
    50-80 ms in ``xarm_node`` and ``standin_world`` (measured with ``gc.callbacks``), during which
    the real arm's control loop sent nothing and the driver's watchdog stopped the arm. Frozen
    objects (the long-lived modules, nodes and models) are never scanned again, so a collection
    only walks what the loop allocated since.
    """
    import gc

    gc.collect()
    gc.freeze()


def spin_until_finished(nodes: Sequence[Node], finished: threading.Event | None, timeout: float | None = None,
                        context: Any = None, on_stop: Callable[[], None] | None = None) -> int:
    """Spin each of ``nodes`` on its own :class:`~rclpy.executors.SingleThreadedExecutor` in a
    background thread until ``finished`` is set, the context shuts down (SIGINT) or
    ``timeout`` s pass.

    One single-threaded executor per node, not one multi-threaded executor: rclpy's
    MultiThreadedExecutor costs several times more CPU per message (measured here: about
    0.8 ms against 0.16 ms per JointState) and falls behind at the experiment's ~1000
    messages/s; separate executors still let one node's blocking call (an SDK round trip, a
    physics step) run while another node's callbacks are served. rclpy's C++ ``EventsExecutor``
    (``rclpy.experimental``) would cost less per message, but in the pinned Kilted wheels, spun in a
    background thread, it delivered no message in 8 s and kept a core busy, and spun in the main thread
    its timer never ran and it did not stop on SIGTERM (2026-11-28), so it is not used. On a slow day
    the single-threaded executor took 0.45 ms of CPU per JointState at 600 messages/s, four fifths
    of it in the executor's Python (the transport, UDP on loopback or shared memory, made no
    difference).

    ``on_stop`` is called first when the spinning ends, for whatever reason (before the executors
    are shut down).

    Returns
    -------
    int
        0 when ``finished`` was set, 130 after a shutdown (Ctrl-C), 124 on timeout.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    executors = []
    threads = []
    stopping = threading.Event()

    def spin(executor: SingleThreadedExecutor) -> None:
        # A failing callback must not silently stop the node: log it and keep spinning.
        while rclpy.ok(context=context):
            try:
                executor.spin()
                return
            except ExternalShutdownException:
                return
            except Exception:
                if stopping.is_set() or not rclpy.ok(context=context):
                    # Shutting down: the executor's guard condition or an entity went away under
                    # a callback that was still running (rclpy raises InvalidHandle then).
                    return
                traceback.print_exc()

    for node in nodes:
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        executors.append(executor)
        thread = threading.Thread(target=spin, args=(executor,), name=f"spin-{node.get_name()}", daemon=True)
        thread.start()
        threads.append(thread)
    deadline = None if timeout is None else time.monotonic() + timeout
    status = 0
    try:
        while True:
            if finished is not None and finished.wait(0.05):
                break
            if finished is None:
                time.sleep(0.05)
            if not rclpy.ok(context=context):
                status = 130
                break
            if deadline is not None and time.monotonic() > deadline:
                status = 124
                break
    except KeyboardInterrupt:
        status = 130
    finally:
        if on_stop is not None:
            on_stop()
        stopping.set()
        for executor in executors:
            executor.shutdown(timeout_sec=2.0)
        for thread in threads:
            thread.join(timeout=2.0)
    return status
