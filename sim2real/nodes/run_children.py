"""The child processes of one run of :func:`sim2real.nodes.runner.run_experiment`.

* :class:`_Child`: one node group (:mod:`sim2real.nodes.group`) in a new interpreter, started with
  the run's params files and stopped by its pid (SIGINT, then SIGKILL after 5 s);
* :class:`_ChildWatcher`: a thread that stops the experiment as soon as a child dies.

Times are seconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from sim2real.errors import RunFailedError

#: Niceness of the mirrored sim platform's process: it runs lock-step on an ideal clock and
#: tolerates lag, so on a busy machine the real control loop and the stand-in go first.
SIM_NICENESS = 5


class _Child:
    """One child process running a group of nodes (:mod:`sim2real.nodes.group`)."""

    def __init__(self, names: list[str], process: subprocess.Popen[bytes], ready_file: Path) -> None:
        self.names = names
        self.process = process
        self.ready_file = ready_file

    @classmethod
    def start(cls, names: list[str], params_files: list[Path], workdir: Path, namespace: str = "") -> _Child:
        """Start ``names`` in a new interpreter (SIGINT raising from its first line on, same environment), which
        ends when this process dies (``--parent-pid``; call from the main thread, since the
        kernel ties that to the thread that started the child)."""
        ready = workdir / f"{'+'.join(names)}.ready"
        command = [sys.executable, "-m", "sim2real.nodes.group", "--ready-file", str(ready), "--parent-pid",
                   str(os.getpid()), *names, "--ros-args"]
        for path in params_files:
            command += ["--params-file", str(path)]
        if namespace:
            command += ["-r", f"__ns:=/{namespace.strip('/')}"]
        niceness = SIM_NICENESS if "sim_node" in names else 0

        def prepare() -> None:
            # Ignored until the group's first line takes it (sim2real.nodes.group): a Ctrl-C during the
            # interpreter's start-up is then no traceback; the parent stops its children itself.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            if niceness:
                os.nice(niceness)
        # The SDK prints to stdout; keep the parent's stdout for its progress lines.
        process = subprocess.Popen(command, preexec_fn=prepare, stdout=2)
        return cls(names, process, ready)

    @property
    def label(self) -> str:
        return " + ".join(self.names)

    def wait_ready(self, wait: float = 120.0) -> None:
        """Wait until every node of the group has been constructed (generous: the first start
        after an engine change compiles the engine, tens of seconds).

        Raises
        ------
        RunFailedError
            The child exited first (e.g. a node could not start) or did not get ready in time.
        """
        deadline = time.monotonic() + wait
        while not self.ready_file.exists():
            if self.process.poll() is not None:
                raise RunFailedError(f"the {self.label} process exited at start (status {self.process.returncode})")
            if time.monotonic() > deadline:
                self.stop()
                raise RunFailedError(f"the {self.label} process did not start within {wait:g} s")
            time.sleep(0.05)

    def stop(self, grace: float = 5.0) -> None:
        """SIGINT, then SIGKILL after ``grace`` s (this child only, by pid); never raises.

        A child starved of CPU may take longer than ``grace`` to close, and even to die after SIGKILL:
        it is then left to the kernel (it ends as this process does: ``--parent-pid``) rather than
        turning a recorded run into a traceback.
        """
        process = self.process
        if process.poll() is not None:
            return
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)


class _ChildWatcher:
    """Stops the experiment as soon as a child process dies (instead of waiting for timeouts)."""

    def __init__(self, children: list[_Child], experiment: Any) -> None:
        self.children = children
        self.experiment = experiment
        self.failure: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="sim2real-children", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            for child in self.children:
                if child.process.poll() is not None:
                    self.failure = f"the {child.label} process exited (status {child.process.returncode})"
                    self.experiment.abort(self.failure)
                    return

    def stop(self) -> None:
        """Stop watching (before the children are stopped on purpose)."""
        self._stop.set()
        self._thread.join(timeout=1.0)
