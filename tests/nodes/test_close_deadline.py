"""A node process ends after its stop even when something in it hangs (:mod:`sim2real.process_deadline`).

Regression: 20 s after SIGKILL of ``sim2real run``, one of its node processes (told by the kernel
with SIGTERM) was still running; a killed parent must not leave a node behind.
"""

import signal
import subprocess
import sys

from children import default_sigint

#: A node process whose node's ``close()`` never returns; the deadline shortened to 1 s.
STUCK_NODE = """
import sys, threading
from rclpy.node import Node
from sim2real.nodes import process
process.CLOSE_DEADLINE_S = 1.0

class StuckNode(Node):
    def __init__(self):
        super().__init__("stuck_close")

    def close(self):
        threading.Event().wait()

sys.exit(process.run_nodes([StuckNode], ["stuck"], "stuck", ready=lambda: print("up", flush=True)))
"""

#: A node script whose interpreter's finalization would never end (an object whose destructor blocks in
#: a C call that keeps the GIL); the deadline shortened to 1 s.
STUCK_FINALIZER = """
import ctypes, sys
from rclpy.node import Node
from sim2real.nodes import process
process.CLOSE_DEADLINE_S = 1.0

class Up(Node):
    def __init__(self):
        super().__init__("up")
        print("up", flush=True)

class HangsWhenFreed:
    def __del__(self):
        ctypes.PyDLL(None).pause()

freed_at_finalization = HangsWhenFreed()
sys.exit(process.run_node(Up, ["up", "--ros-args"], name="up", doc="A node that is up."))
"""

#: A process whose non-daemon thread never ends, so the interpreter's shutdown would wait forever.
STUCK_THREAD = """
import threading
from sim2real.process_deadline import end_after

def never_ends():
    threading.Event().wait()

threading.Thread(target=never_ends).start()
end_after(0.5, 124, "still here")
"""

#: A process whose main thread holds the GIL in a C call that never returns (libc ``pause`` through
#: ``ctypes.PyDLL``, which keeps the GIL): no Python thread runs, so only the interval timer ends it.
HELD_GIL = """
import ctypes
from sim2real.process_deadline import end_after

def hold_the_gil():
    ctypes.PyDLL(None).pause()

end_after(0.5, 124, "still here")
hold_the_gil()
"""


def _ended(process: subprocess.Popen) -> tuple[int, str]:
    try:
        _, err = process.communicate(timeout=60)  # a hang guard only: the deadline is seconds
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, err


def test_a_node_stuck_in_close_ends_the_process_after_the_deadline_with_its_stack(ros_env):
    process = subprocess.Popen([sys.executable, "-c", STUCK_NODE], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    assert process.stdout.readline().strip() == "up"
    process.send_signal(signal.SIGTERM)
    status, err = _ended(process)
    assert status == 124, err[-2000:]
    assert "stuck: the nodes are still closing 1 s after the stop; ending the process now" in err
    assert "in close" in err  # the stack of the thread that hung, for whoever reads the log


def test_a_stopped_node_process_ends_without_the_interpreters_finalization(ros_env):
    process = subprocess.Popen([sys.executable, "-c", STUCK_FINALIZER], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint, env=ros_env)
    assert process.stdout.readline().strip() == "up"
    process.send_signal(signal.SIGINT)
    status, err = _ended(process)
    assert status == 0, err[-2000:]  # finalization would have hung until the timer's SIGALRM
    assert "still closing" not in err and "Traceback" not in err


def test_the_deadline_also_bounds_the_interpreters_wait_for_threads():
    process = subprocess.Popen([sys.executable, "-c", STUCK_THREAD], stderr=subprocess.PIPE, text=True)
    status, err = _ended(process)
    assert status == 124 and "still here" in err and "in never_ends" in err


def test_a_process_that_holds_the_gil_is_ended_by_the_timer_with_its_stack():
    process = subprocess.Popen([sys.executable, "-c", HELD_GIL], stderr=subprocess.PIPE, text=True)
    status, err = _ended(process)
    assert status == -signal.SIGALRM, err[-2000:]
    assert "still here" not in err  # the deadline's thread never ran
    assert "in hold_the_gil" in err  # the C handler wrote the stack without the GIL
