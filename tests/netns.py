"""Run a command in a network namespace of its own, where only loopback exists.

For third-party runtimes that reach beyond loopback on their own (Ray probes cloud metadata
addresses at start-up): inside the namespace nothing can leave the machine, whatever the
program tries. Needs root or unprivileged user namespaces; :func:`isolation_problem` says
why not when they are unavailable.

Used as a launcher: ``python tests/netns.py CMD ARGS...`` enters a new namespace, brings
``lo`` up and replaces itself with CMD.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
import subprocess
import sys
from pathlib import Path

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
LAUNCHER = Path(__file__).resolve()


def _enter() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        uid, gid = os.getuid(), os.getgid()
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET) failed: " + os.strerror(ctypes.get_errno()))
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(sock, SIOCGIFFLAGS, request)[:18])[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))


def isolation_problem() -> str | None:
    """None when a namespace can be made here, else the reason."""
    probe = subprocess.run([sys.executable, str(LAUNCHER), sys.executable, "-c",
                            "import socket; print(sorted(n for _, n in socket.if_nameindex()))"],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0 or probe.stdout.strip() != "['lo']":
        return f"no network namespace here: {(probe.stderr or probe.stdout).strip()[-300:]}"
    return None


def command(*args: str) -> list[str]:
    """``args`` run through the launcher (for ``subprocess``)."""
    return [sys.executable, str(LAUNCHER), *args]


if __name__ == "__main__":
    _enter()
    os.execvp(sys.argv[1], sys.argv[1:])
