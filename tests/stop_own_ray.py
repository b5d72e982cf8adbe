"""Stop the Ray processes one test started, and no others: ``python tests/stop_own_ray.py RAY_TMPDIR``.

``ray stop`` stops every Ray process of the user on the machine: a second test run beside this one
(another clone's suite) lost its cluster to it ("Failed to connect to GCS within 60 seconds"), and so
would a developer's own cluster. The processes a test's ``ray start`` left behind carry the test's own
``RAY_TMPDIR`` in their environment (Ray's agents and workers rename their command lines, so the
environment, not the command line, is what is matched); they are killed (SIGKILL), except this process
and its parent (the shell whose exit trap runs this).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path


def own_processes(ray_tmpdir: str) -> list[int]:
    """Pids of the processes whose environment sets ``RAY_TMPDIR`` to ``ray_tmpdir``, but this one and its parent."""
    marker = f"\0RAY_TMPDIR={ray_tmpdir}\0".encode()
    spared = {os.getpid(), os.getppid()}
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in spared:
            continue
        with contextlib.suppress(OSError):  # ended meanwhile, or not ours to read
            if marker in b"\0" + (entry / "environ").read_bytes() + b"\0":
                pids.append(int(entry.name))
    return pids


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1]:
        print("usage: stop_own_ray.py RAY_TMPDIR", file=sys.stderr)
        return 2
    for pid in own_processes(sys.argv[1]):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
