"""The robot's address: given by the user or nothing; sim2real never connects anywhere it was not told.

Every route that could reach a real controller (``run --mode real|mirror``, ``xarm_node``, the
driver, ``box_push.launch.py``) has no default address and refuses to start without one, before
any socket is opened. Every host argument (robot, stand-in, emulator) is an IP literal, checked
with :mod:`ipaddress`: a host name is refused in one line and never goes to DNS. The subprocess
checks run under an audit hook that turns any connection to a non-loopback address, and any
host-name lookup, into a failure.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sim2real.errors import Sim2RealError
from sim2real.hardware import DriverConfig, EmulatorConfig, require_robot_address

ROOT = Path(__file__).resolve().parents[2]
#: Run a sim2real entry point in a child whose every non-loopback connect() is a failure (exit 99),
#: and so is every host-name lookup (socket.getaddrinfo, gethostbyname) and every host name given to
#: connect/bind/sendto, which resolve it themselves (exit 98).
GUARDED = """\
import ipaddress
import os
import sys
def literal(host):
    try:
        return ipaddress.ip_address(host.decode() if isinstance(host, bytes) else str(host).split("%")[0])
    except (ValueError, UnicodeDecodeError):
        return None
def guard(event, args):
    address = args[1] if event in ("socket.connect", "socket.bind", "socket.sendto") else None
    host = address[0] if isinstance(address, tuple) and address else None
    if event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex"):
        host = args[0]
    if host not in (None, "", b"") and literal(host) is None:
        print(f"HOST NAME LOOKUP {host!r} ({event})", file=sys.stderr, flush=True)
        os._exit(98)
    if event == "socket.connect" and host is not None and not literal(host).is_loopback:
        print(f"CONNECT ATTEMPT {address}", file=sys.stderr, flush=True)
        os._exit(99)
sys.addaudithook(guard)
import runpy

sys.argv = sys.argv[1:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


#: Every test here may start ROS 2 (in a child): its own domain and log directory.
pytestmark = pytest.mark.usefixtures("ros_child_env")


def _env(tmp_path: Path) -> dict[str, str]:
    """The child's environment: the module's ROS 2 domain (``ros_child_env``), its own log directory."""
    return {**os.environ, "ROS_LOG_DIR": str(tmp_path / "roslog"), "PYTHONPATH": str(ROOT)}


def _guarded(tmp_path: Path, module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", GUARDED, module, *args], env=_env(tmp_path), cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def test_an_address_must_be_given_as_an_ipv4_literal() -> None:
    assert require_robot_address(" 192.168.1.185 ") == "192.168.1.185"
    for missing in (None, "", "   "):
        with pytest.raises(Sim2RealError, match="no robot address"):
            require_robot_address(missing)
    for bad in ("xarm.local", "192.168.1", "::1", "192.168.1.300"):
        with pytest.raises(Sim2RealError, match="dotted IPv4"):
            require_robot_address(bad)
    with pytest.raises(Sim2RealError, match="no xArm address"):
        DriverConfig(ip="")


#: Host names that look like loopback or like an address; none is an IP literal.
HOST_NAMES = ("127.example.com", "localhost", "127.0.0.1.nip.io", "0x7f.1")


@pytest.mark.parametrize("name", HOST_NAMES)
def test_every_host_argument_is_an_ip_literal(name: str) -> None:
    from sim2real.nodes.runner import check_loopback_ip

    with pytest.raises(Sim2RealError, match="loopback IPv4 address"):
        check_loopback_ip(name, "--standin-host")
    with pytest.raises(Sim2RealError, match="dotted IPv4 loopback address"):
        EmulatorConfig(host=name)
    with pytest.raises(Sim2RealError, match="dotted IPv4 address"):
        require_robot_address(name)
    with pytest.raises(Sim2RealError, match="dotted IPv4 address"):
        DriverConfig(ip=name)


@pytest.mark.parametrize("args", [
    ("sim2real", "run", "--mode", "standin", "--standin-host", "127.example.com", "--out", "out"),
    ("sim2real", "run", "--mode", "real", "--robot-ip", "127.example.com", "--out", "out"),
    ("sim2real", "run", "--mode", "mirror", "--robot-ip", "127.example.com", "--out", "out"),
    ("sim2real", "demo", "--standin-host", "127.example.com", "--out", "out"),
    ("sim2real", "emulate-xarm", "--host", "127.example.com", "--port", "5931", "--duration", "1"),
    ("sim2real.nodes.xarm_node", "--ros-args", "-p", "robot_ip:=127.example.com", "-p", "connect_wait:=0.0"),
    ("sim2real.nodes.standin_world", "--ros-args", "-p", "host:=127.example.com"),
], ids=["run-standin", "run-real", "run-mirror", "demo", "emulate-xarm", "xarm_node", "standin_world"])
def test_a_host_name_is_refused_in_one_line_and_never_looked_up(tmp_path: Path, args: tuple[str, ...]) -> None:
    result = _guarded(tmp_path, *args)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "127.example.com" in lines[0] and "IP" in lines[0], result.stderr[-2000:]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("mode", ["real", "mirror"])
def test_run_without_robot_ip_refuses_before_anything(tmp_path: Path, mode: str) -> None:
    out = tmp_path / "run"
    result = _guarded(tmp_path, "sim2real", "run", "--mode", mode, "--out", str(out))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--robot-ip" in lines[0] and "Traceback" not in result.stderr, result.stderr
    assert not out.exists()


def test_run_refuses_a_robot_ip_in_modes_without_a_robot(tmp_path: Path) -> None:
    result = _guarded(tmp_path, "sim2real", "run", "--mode", "sim", "--robot-ip", "10.1.2.3", "--out",
                      str(tmp_path / "run"))
    assert result.returncode == 2 and "applies to --mode real and mirror with --via sdk only" in result.stderr, \
        result.stderr
    assert not (tmp_path / "run").exists()


def test_xarm_node_without_robot_ip_says_so_in_one_line(tmp_path: Path) -> None:
    result = _guarded(tmp_path, "sim2real.nodes.xarm_node", "--ros-args", "-p", "connect_wait:=0.0")
    assert result.returncode == 2, result.stderr[-2000:]
    assert "robot_ip" in result.stderr and "Traceback" not in result.stderr, result.stderr[-2000:]


def test_run_experiment_needs_the_address_in_real_modes(tmp_path: Path) -> None:
    from sim2real.nodes.runner import run_experiment
    from sim2real.params import ParameterSet

    with pytest.raises(Sim2RealError, match="no robot address"):
        run_experiment("real", "0.30", ParameterSet.nominal(), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_no_shipped_default_names_a_robot_address() -> None:
    """Launch files, configs and argument defaults name no address but loopback ones."""
    literal = re.compile(r"\b(\d{1,3})\.\d{1,3}\.\d{1,3}\.\d{1,3}\b")
    for path in [*(ROOT / "launch").glob("*.py"), *(ROOT / "config").glob("*.yaml")]:
        for match in literal.finditer(path.read_text()):
            assert match.group(1) == "127", (path.name, match.group(0))
    for path in (ROOT / "sim2real").rglob("*.py"):
        for line in path.read_text().splitlines():
            if "default" in line and (match := literal.search(line)):
                assert match.group(1) == "127", (path.name, line.strip())
