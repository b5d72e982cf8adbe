"""What a busy machine may do to a stand-in run's recording, as the tests that run one accept it.

The stand-in runs on the wall clock (see docs/getting-started.md, "Why the demo runs on the wall
clock"), so a starved machine can delay the real control loop (``run`` names the trial ``STARVED``,
exit 3) or cut a stream of a trial whose loop it starved (``INCOMPLETE``, written ``complete: false``).
A process kept from the CPU for longer than the driver's limits makes the driver latch a fault and stop
the arm (``run`` exits 4, naming the fault: :data:`STARVATION_FAULTS`). All are honest answers of the run,
not faults of it. A test that needs a complete recording runs the experiment again when, and only when,
every incomplete trial is one whose loop the run reported starved, or the run was stopped by a starvation
fault (at most :data:`ATTEMPTS` runs), as the demo repeats an experiment whose trial came out incomplete.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sim2real.errors import HardwareFaultError

Result = TypeVar("Result")

#: First words of the lines ``sim2real run`` prints for a trial that is not a clean recording.
REMARKS = ("STARVED", "INCOMPLETE", "DEGRADED")
#: Runs a test makes before it gives up on a complete recording.
ATTEMPTS = 3
#: Faults the xArm driver latches when a process of the graph got no CPU for too long: its own (the
#: controller's auto-stop ran out) or the stand-in's, whose emulator then answered late (a link stall).
STARVATION_FAULTS = ("frozen or starved", "the xArm link stalled")


def remarks(stdout: str) -> list[str]:
    """The run's remark lines (``STARVED name platform``, ``INCOMPLETE name ...``, ``DEGRADED ...``)."""
    return [line for line in stdout.splitlines() if line.split(" ", 1)[0] in REMARKS]


def recorded(returncode: int, stdout: str) -> bool:
    """Every trial recorded complete: exit 0, or 3 when the only remarks are starved control loops."""
    found = remarks(stdout)
    return returncode == 0 or (returncode == 3 and bool(found) and all(r.startswith("STARVED") for r in found))


def cut_by_load(returncode: int, stdout: str) -> bool:
    """Exit 3 with incomplete trials, each of them one whose control loop the run reported starved (and
    nothing degraded): the machine, not the run, cut the recording; another attempt may be complete."""
    found = remarks(stdout)
    starved = {r.split()[1] for r in found if r.startswith("STARVED") and len(r.split()) > 1}
    incomplete = [r.split()[1].rstrip(":") for r in found if r.startswith("INCOMPLETE") and len(r.split()) > 1]
    return (returncode == 3 and bool(incomplete) and all(name in starved for name in incomplete)
            and not any(r.startswith("DEGRADED") for r in found))


def stopped_by_load(returncode: int, stderr: str) -> bool:
    """The run stopped on a fault the driver latched, and the fault is one of :data:`STARVATION_FAULTS`."""
    return returncode == HardwareFaultError.exit_status and any(fault in stderr for fault in STARVATION_FAULTS)


def until_recorded(run: Callable[[int], Result], status: Callable[[Result], tuple[int, str, str]]) -> Result:
    """``run(attempt)`` for attempt 1, 2, ... until its recording is not one a starved loop cut
    (:func:`cut_by_load`) nor a run a starvation fault stopped (:func:`stopped_by_load`), judged on
    ``status(result)``: exit code, stdout and stderr; at most :data:`ATTEMPTS` runs. Returns the last
    result (the caller asserts :func:`recorded` on it)."""
    for attempt in range(1, ATTEMPTS + 1):
        result = run(attempt)
        code, stdout, stderr = status(result)
        if attempt == ATTEMPTS or not (cut_by_load(code, stdout) or stopped_by_load(code, stderr)):
            return result
        print(f"attempt {attempt}: the machine's load cut the recording or stopped the arm "
              f"({remarks(stdout)} {stderr.strip().splitlines()[-1:]}); again")
    raise AssertionError("unreachable: ATTEMPTS is at least 1")
