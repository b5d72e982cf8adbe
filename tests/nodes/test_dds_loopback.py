"""Nothing a local run starts listens beyond loopback (issue 12).

``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` keeps every DDS packet on loopback, but Fast DDS's
built-in transport still binds its discovery and data ports on 0.0.0.0, reachable from the
network. ``sim2real run --mode standin`` (and ``sim``, and the demo) point Fast DDS at
``config/fastdds_loopback.xml``; here the whole stand-in graph (this run's process and its three
children) is started without any profile in its environment, and the sockets of every process
are read from ``/proc`` while a trial runs.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pytest
from children import default_sigint
from loopback import free_host

from sim2real.paths import PROFILE_VARIABLES, loopback_profile, use_loopback_profile

ROOT = Path(__file__).resolve().parents[2]
#: A short trial: the graph only has to be up and talking while the sockets are read.
EXPERIMENT = """\
experiment:
  ros__parameters:
    distances: [0.30]
    start_tolerance: 0.01
    push: {height: 0.15, lateral: 0.0, start_x: 0.20, end_x: 0.42, speed: 0.2, ramp_time: 0.2,
           pre_time: 0.1, settle_time: 1.5, rate_hz: 100.0}
"""
#: /proc/net tables of the internet sockets (raw sockets are not expected at all).
TABLES = ("udp", "udp6", "tcp", "tcp6", "raw", "raw6")
TCP_LISTEN = 0x0A


class Socket(NamedTuple):
    """One internet socket of a process, as /proc/net lists it."""

    table: str
    address: str
    port: int
    state: int

    @property
    def on_loopback(self) -> bool:
        """Bound to 127.0.0.0/8 or ::1 (or an IPv4-mapped loopback address)."""
        address = ipaddress.ip_address(self.address)
        mapped = getattr(address, "ipv4_mapped", None)
        return bool((mapped or address).is_loopback)

    def __str__(self) -> str:
        return f"{self.table} {self.address}:{self.port}" + (" LISTEN" if self.state == TCP_LISTEN else "")


def _address(text: str) -> tuple[str, int]:
    """``0100007F:1B58`` (or the 32-hex-digit IPv6 form) → ``("127.0.0.1", 7000)``."""
    host, port = text.split(":")
    raw = bytes.fromhex(host)
    # /proc/net prints each 32-bit word in host (little-endian) order.
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(raw)), int(port, 16)


def inet_sockets(pid: int) -> list[Socket]:
    """The internet sockets process ``pid`` holds: its socket inodes in ``/proc/<pid>/fd``, looked up
    in ``/proc/<pid>/net/{udp,udp6,tcp,tcp6,raw,raw6}``. Empty once the process has gone."""
    inodes = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return []
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[len("socket:["):-1]))
    found = []
    for table in TABLES:
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            return []
        for line in lines:
            fields = line.split()
            if int(fields[9]) in inodes:
                found.append(Socket(table, *_address(fields[1]), int(fields[3], 16)))
    return found


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants now."""
    tree, queue = [], [pid]
    while queue:
        current = queue.pop()
        tree.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError):  # the task ended meanwhile
                queue += [int(child) for child in (task / "children").read_text().split()]
    return tree


def ephemeral_ports() -> range:
    """The ports the kernel picks for a socket bound to port 0."""
    low, high = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    return range(low, high + 1)


def environment(pid: int) -> dict[str, str]:
    """The environment process ``pid`` was started with."""
    entries = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(entry.decode(errors="replace").partition("=")[::2] for entry in entries if b"=" in entry)


@pytest.fixture(scope="module")
def standin_run(ros_env, tmp_path_factory) -> dict[int, tuple[str, list[Socket], dict[str, str]]]:
    """``{pid: (command line, sockets seen, environment)}`` of a ``sim2real run --mode standin``
    and its children, read during its first trial; the run is then stopped with Ctrl-C."""
    tmp = tmp_path_factory.mktemp("dds")
    experiment = tmp / "experiment.yaml"
    experiment.write_text(EXPERIMENT)
    out = tmp / "run"
    env = {name: value for name, value in ros_env.items() if name not in PROFILE_VARIABLES}
    env.update(ROS_LOG_DIR=str(tmp / "roslog"), PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        [sys.executable, "-m", "sim2real", "run", "--mode", "standin", "--experiment", str(experiment),
         "--standin-host", free_host(), "--out", str(out)],
        env=env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    seen: dict[int, tuple[str, list[Socket], dict[str, str]]] = {}
    tree: list[int] = []
    try:
        deadline = time.monotonic() + 120
        # The experiment starts a trial only once every node has matched its topics.
        while not (out.is_dir() and any(p.name.endswith(".partial") for p in out.iterdir())):
            assert process.poll() is None, process.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the trial never started"
            time.sleep(0.05)
        for _ in range(5):  # a few looks while the trial runs: a socket opened late counts too
            tree = process_tree(process.pid)
            for pid in tree:
                try:
                    command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                    if pid not in seen:
                        seen[pid] = (command, [], environment(pid))
                except OSError:
                    continue
                seen[pid][1].extend(s for s in inet_sockets(pid) if s not in seen[pid][1])
            time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 130, err[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in tree[1:]:  # never leave a node behind, whatever failed
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, signal.SIGKILL)
    return seen


def test_the_run_and_its_children_use_the_loopback_profile(standin_run):
    assert len(standin_run) == 4  # sim2real run + stand-in, real platform, sim platform
    main, *children = standin_run
    assert not any(name in standin_run[main][2] for name in PROFILE_VARIABLES)  # not given: the run set it
    for pid in children:
        command, _, env = standin_run[pid]
        assert env.get("FASTDDS_DEFAULT_PROFILES_FILE") == str(loopback_profile()), command


def test_nothing_listens_beyond_loopback(standin_run):
    """Every port a DDS participant (or the emulated controller, or the driver) chose is bound to
    loopback. What remains beyond it is send-only: the UDP sockets rmw_fastrtps_cpp's own transport
    opens in LOCALHOST mode, on ports the kernel picks, at most one on the wildcard address and
    one per interface address in each process."""
    kernel_picked = ephemeral_ports()
    domain = int(os.environ["ROS_DOMAIN_ID"])
    rtps_ports = range(7400 + 250 * domain, 7400 + 250 * (domain + 1))
    if set(rtps_ports) & set(kernel_picked) or 7000 in kernel_picked:
        pytest.skip(f"the ephemeral port range {kernel_picked} overlaps the ports DDS listens on")
    udp_ports = 0
    for command, sockets, _ in standin_run.values():
        assert sockets, f"no internet socket in {command}: were they read at all?"
        assert not [s for s in sockets if s.table.startswith("raw")], command
        assert all(s.on_loopback for s in sockets if s.table.startswith("tcp")), (command, [str(s) for s in sockets])
        chosen = [s for s in sockets if s.table.startswith("udp") and s.port not in kernel_picked]
        assert chosen and all(s.on_loopback for s in chosen), (command, [str(s) for s in sockets])
        udp_ports += len(chosen)
        beyond = [s for s in sockets if not s.on_loopback]
        assert all(s.table.startswith("udp") and s.port in kernel_picked for s in beyond), (command, beyond)
        addresses = [s.address for s in beyond]
        assert len(addresses) == len(set(addresses)), (command, [str(s) for s in beyond])
    assert udp_ports >= 3 * len(standin_run)  # each participant: discovery and data ports (and one more)


@pytest.mark.xfail(strict=True, reason="rmw_fastrtps_cpp 9.3.3 adds its own UDPv4 transport without an allowlist "
                   "under ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST; its send-only sockets bind 0.0.0.0 and each "
                   "interface address whatever the profile says. Passing means that is gone: drop this mark.")
def test_no_socket_at_all_beyond_loopback(standin_run):
    beyond = {command: [str(s) for s in sockets if not s.on_loopback]
              for command, sockets, _ in standin_run.values()}
    assert not any(beyond.values()), beyond


def test_the_profile_is_used_only_on_loopback_and_never_over_a_users_own():
    profile = str(loopback_profile())
    env = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    assert use_loopback_profile(env) == loopback_profile() and env["FASTDDS_DEFAULT_PROFILES_FILE"] == profile
    assert Path(profile).is_file()
    for mine in PROFILE_VARIABLES:  # either name of a user's own profile wins
        env = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", mine: "/lab/profile.xml"}
        assert use_loopback_profile(env) is None
        assert env == {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", mine: "/lab/profile.xml"}
    for wider in ({"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}, {"ROS_AUTOMATIC_DISCOVERY_RANGE": "SYSTEM_DEFAULT"},
                  {}):
        env = dict(wider)
        assert use_loopback_profile(env) is None and env == wider


def test_socket_addresses_are_decoded():
    assert _address("0100007F:1B58") == ("127.0.0.1", 7000)
    assert _address("00000000000000000000000001000000:0035") == ("::1", 53)
    assert Socket("udp6", "::ffff:127.0.0.1", 1, 7).on_loopback
    assert not Socket("udp", "0.0.0.0", 1, 7).on_loopback
    assert not Socket("udp6", "::", 1, 7).on_loopback
