"""Ctrl-C at any moment of a command's start-up: one line ("interrupted"), exit 130, nothing half-written.

Each case starts the real ``sim2real`` command (``python -m sim2real``) in a subprocess in a directory
of its own, sends it SIGINT a delay after the interpreter is up (while the command imports, resolves
its inputs or has begun its work) and checks: no traceback on stderr; exit status 130 with
``sim2real: interrupted`` as the last line (or a normal exit when the command had already finished);
no hidden staging file or directory left behind, and every input file unchanged.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from children import HANG_GUARD_S
from fixtures.synthetic_trials import make_trial

from sim2real.trials import write_run_meta, write_trial

#: The commands here may import ROS 2 in a child but run nothing real-time: their own domain and log
#: directory, in the ``children`` tier (beside the serial tiers in ``make test``, at idle priority: an
#: interrupt then lands at other moments of the start-up, which is what the test is about).
pytestmark = pytest.mark.usefixtures("ros_child_env")

ROOT = Path(__file__).resolve().parents[2]
#: Bound on any one command after its interrupt (s): a guard against hangs, not a time limit (at idle priority beside
#: the real-time tiers a child may get no CPU for minutes: fresh clone 2026-12-03, a fit not done 60 s after it).
WITHIN = HANG_GUARD_S
#: Delays (s) after the start at which SIGINT is sent: during imports, input checks and early work.
DELAYS = (0.3, 0.6, 1.0)
#: Exit statuses of a command that finished normally before the interrupt landed.
FINISHED = (0, 1, 3)
#: ``python -m sim2real ARGS`` once the interpreter is up: the delays count from there. On a busy machine the
#: interpreter's own start-up (before any of the package's code runs) can take longer than the shortest
#: delay, and an interrupt there is Python's to report, not the command's.
AS_MODULE = ("import runpy, sys; sys.argv[0] = 'sim2real'; print('interpreter up', flush=True); "
             "runpy.run_module('sim2real', run_name='__main__', alter_sys=True)")


def _run_dir(path: Path) -> Path:
    write_run_meta(path, {"mode": "standin", "mirror": "closed", "distances_m": [0.3]})
    write_trial(path, make_trial(0, 0.30, duration=0.5, rate_hz=50.0))
    return path


def _simulate(p: Path) -> list[str]:
    return ["simulate", "--distance", "0.35", "--out", "trial_sim"]


def _fit(p: Path) -> list[str]:
    return ["fit", str(_run_dir(p / "run")), "--free", "box.mass", "--out", "fitted.yaml"]


def _replay(p: Path) -> list[str]:
    return ["replay", str(_run_dir(p / "run")), "--out", "replayed"]


def _import_cube_toss(p: Path) -> list[str]:
    return ["import", "cube-toss", "--tosses", "0-49", "--out", "tosses"]


COMMANDS: dict[str, Callable[[Path], list[str]]] = {
    "simulate": _simulate,
    "fit": _fit,
    "replay": _replay,
    "import_cube_toss": _import_cube_toss,
}


def _snapshot(directory: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(directory)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(directory.rglob("*"))}


@pytest.mark.parametrize("delay", DELAYS)
@pytest.mark.parametrize("name", list(COMMANDS))
def test_interrupt_during_start_up_is_one_line_and_exit_130(tmp_path: Path, name: str, delay: float) -> None:
    work = tmp_path / "work"
    work.mkdir()
    args = COMMANDS[name](work)
    before = _snapshot(work)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", AS_MODULE, *args], cwd=work, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout.readline() == "interpreter up\n"
    time.sleep(delay)
    if child.poll() is None:
        child.send_signal(signal.SIGINT)
    try:
        _, stderr = child.communicate(timeout=WITHIN)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise
    assert "Traceback" not in stderr, stderr[-2000:]
    assert child.returncode in (130, *FINISHED), (child.returncode, stderr[-2000:])
    after = _snapshot(work)
    hidden = [rel for rel in after if any(part.startswith(".") for part in Path(rel).parts)]
    assert not hidden, hidden  # no staging file or directory left behind
    assert {rel: after.get(rel, b"gone") for rel in before} == before  # inputs untouched
    if child.returncode == 130:
        lines = [line for line in stderr.splitlines() if line.strip()]
        assert lines and lines[-1] == "sim2real: interrupted", stderr[-2000:]
