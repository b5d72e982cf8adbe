"""Session set-up shared by every test: ROS 2 stays on loopback, and tiers come from what a test uses.

Tests build their children's environment from ``os.environ``, and rclpy in this process reads it at
the first participant; so both get, from here on, ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``
(whatever the shell had) and the Fast DDS profile that binds every DDS listening port to 127.0.0.1
(``config/fastdds_loopback.xml``; a profile already set in the environment is kept).

**ROS 2.** A test (or a module's fixture) that starts ROS 2, in process or as a child, takes the
:func:`ros_env` fixture: a ``ROS_DOMAIN_ID`` no other test on this machine holds at that moment
(a lock file per domain, so two pytest processes, or two ``-n`` workers, never share one), its own
``ROS_LOG_DIR``, both set in ``os.environ`` for the module and restored after. A module whose
children may start ROS 2 only to refuse bad input (nothing real-time, no node runs a trial) takes
:func:`ros_child_env` instead: the same isolation, in the ``children`` tier.

**Tiers.** Markers are applied here from the fixtures a test uses, never from a list of files:

=========== =====================================================================================
``ros``      uses :func:`ros_env` (a ROS 2 graph)
``hardware`` uses :func:`xarm_emulator` or its module uses the loopback emulator helpers
             (``loopback.start_emulator``, ``free_host``): servers on loopback ports
``ray``      uses the Ray fixtures (``ray_tmp``, ``isolated``): a Ray runtime in a namespace
``system``   uses :func:`chromium` (a browser) or the colcon build (``colcon_install``)
``children`` uses :func:`ros_child_env`: runs ``sim2real`` commands in children that may touch ROS 2
             but do nothing real-time (a second each; in ``make test``, not in ``make check``)
``slow``     marked ``@pytest.mark.slow`` by the test (a long computation)
=========== =====================================================================================

**Property tests** (hypothesis) draw the same examples on every run (``derandomize``); set
``HYPOTHESIS_PROFILE=explore`` to search new ones.

``make check`` runs everything without those markers on two processes; ``make test`` runs the
``ros``, ``hardware``, ``ray`` and ``system`` tiers one test at a time, with the computing tiers in
one process beside them.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from sim2real.paths import use_loopback_profile

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
use_loopback_profile()

# Property tests draw the same examples on every run (from each test's name), and keep no example database:
# a suite that passes must pass again on a fresh clone. A random search finds new cases only when someone
# asks for it: ``HYPOTHESIS_PROFILE=explore``.
hypothesis_settings.register_profile("repeatable", derandomize=True, database=None)
hypothesis_settings.register_profile("explore", derandomize=False, database=None)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

#: Fixture name -> tier marker it puts on every test that uses it (directly or through other fixtures).
FIXTURE_MARKERS = {
    "ros_env": "ros",
    "ros_child_env": "children",
    "xarm_emulator": "hardware",
    "ray_tmp": "ray",
    "isolated": "ray",
    "chromium": "system",
    "colcon_install": "system",
}
#: Names whose presence in a test module means it starts servers on loopback (the xArm emulator, its host).
HARDWARE_HELPERS = ("start_emulator", "free_host")
#: Tiers that run one test at a time in ``make test``.
SERIAL_TIERS = ("ros", "hardware", "ray", "system")
#: ROS 2 domain ids handed out to tests: 1-69 but the Makefile's default 57 (0 is left to people, 70-101
#: to benchmarks run beside the suite: ``benchmarks.demo_runs`` uses 70-89).
TEST_DOMAINS = [d for d in range(1, 70) if d != 57]
#: The lock files that keep one domain id per test module on this machine.
DOMAIN_LOCKS = Path(tempfile.gettempdir()) / "sim2real-ros-domains"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tier markers from the fixtures each test uses (see the module docstring)."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        tiers = {marker for fixture, marker in FIXTURE_MARKERS.items() if fixture in names}
        module = getattr(item, "module", None)
        if module is not None and any(hasattr(module, helper) for helper in HARDWARE_HELPERS):
            tiers.add("hardware")
        for tier in sorted(tiers):
            item.add_marker(getattr(pytest.mark, tier))


#: Where this process looks for its next domain id: never back at an id an earlier module of this
#: session used, so that a child process an earlier module left running cannot talk into a later one.
_NEXT_DOMAIN = [os.getpid() % len(TEST_DOMAINS)]  # spread the first tries of concurrent processes


def _lock_domain() -> tuple[int, int]:
    """A ROS 2 domain id no other holder of these locks has, and the open lock file that keeps it."""
    DOMAIN_LOCKS.mkdir(exist_ok=True)
    start = _NEXT_DOMAIN[0]
    for k in range(len(TEST_DOMAINS)):
        index = (start + k) % len(TEST_DOMAINS)
        domain = TEST_DOMAINS[index]
        fd = os.open(DOMAIN_LOCKS / f"{domain}.lock", os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        _NEXT_DOMAIN[0] = index + 1
        return domain, fd
    raise RuntimeError(f"every ROS 2 test domain ({TEST_DOMAINS[0]}-{TEST_DOMAINS[-1]}) is held by another test")


@pytest.fixture(scope="module")
def ros_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment of a module that starts ROS 2: its own domain id and log directory, on loopback.

    Set in ``os.environ`` for the module (rclpy in this process reads it) and restored afterwards;
    the returned dict (a copy of the whole environment) is what children are started with.
    """
    yield from _isolated_ros(tmp_path_factory)


@pytest.fixture(scope="module")
def ros_child_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """:func:`ros_env` for a module whose children may start ROS 2 only to refuse bad input (no node
    runs a trial, nothing is real-time): the same isolation, in the ``children`` tier, which runs
    beside the serial tiers."""
    yield from _isolated_ros(tmp_path_factory)


def _isolated_ros(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Lock a domain id, set it and a new log directory in ``os.environ``; restore both after."""
    domain, lock = _lock_domain()
    saved = dict(os.environ)
    os.environ.update(ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", ROS_DOMAIN_ID=str(domain),
                      ROS_LOG_DIR=str(tmp_path_factory.mktemp("roslog")))
    os.environ.pop("ROS_LOCALHOST_ONLY", None)
    try:
        yield dict(os.environ)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        os.close(lock)


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of Debian's Chromium (``make browser`` installs it); the test is skipped without it."""
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("chromium not installed: run 'make browser' (Debian package)")
    return path


@pytest.fixture()
def xarm_emulator():
    """The starter of the xArm controller emulator on a free loopback host (``loopback.start_emulator``:
    a context manager, ``with xarm_emulator(command_port=...) as emu``); puts the test in the hardware tier."""
    from loopback import start_emulator

    return start_emulator
