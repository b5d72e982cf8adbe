"""What the xArm controller emulator is configured with and reports: its faults to inject (:class:`FaultConfig`),
its configuration (:class:`EmulatorConfig`), a snapshot of its state (:class:`EmulatedState`) and its hooks.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from sim2real.errors import Sim2RealError
from sim2real.hardware import protocol as wire
from sim2real.hardware.limits import XARM6_JOINT_LIMITS
from sim2real.sim.servo import ServoParams

FloatArray = NDArray[np.float64]

N_JOINTS = 6
#: Version string of the emulated controller: xArm 6, SN digits 1303, firmware 2.6.107.
DEFAULT_VERSION = "6,6,XI1303000000,AC1303000000,v2.6.107"

#: Request hook: ``(t, register, params)`` when a command-port request is executed (time s,
#: ``time.monotonic``; register number; parameter bytes); called from a connection thread.
RequestHook = Callable[[float, int, bytes], None]

#: Command hook: ``(t, command)`` when the commanded joint velocity changes (time s,
#: ``time.monotonic``, of the change in the emulated controller's timeline; rad/s, (6,)). Called
#: with the emulator's lock held: keep it short (e.g. append to a list).
CommandHook = Callable[[float, FloatArray], None]

#: Per-tick hook: ``(t, q, v)`` with time (s, ``time.monotonic``), joint positions (rad, (6,))
#: and velocities (rad/s, (6,)); called from the emulator's tick thread.
TickHook = Callable[[float, FloatArray, FloatArray], None]


@dataclass(frozen=True)
class FaultConfig:
    """Faults to inject; times are seconds after the first accepted motion command.

    Attributes
    ----------
    latency : float
        Added delay of every command-port request (s): each is executed and answered this long
        after it arrived (pipelined requests are not delayed one after the other).
    latency_at : float or None
        When the added latency starts (None: from the first request on).
    stall_at : float or None
        When the command channel stalls once (the request received then is answered
        ``stall_duration`` later and only then executed, and so is everything behind it on that
        connection). The controller's motion loop does not stall with it: the velocity command
        already executing still auto-stops after its ``duration`` (the tick thread applies it).
    stall_duration : float
        Length of the stall (s).
    stall_register : int or None
        Stall only on a request to this register (e.g. 42, the joint-state read; 81, a
        velocity command); None: the first request at or after ``stall_at``.
    drop_at : float or None
        When the emulator closes every client connection (it keeps listening).
    error_at : float or None
        When the controller raises error ``error_code``.
    error_code : int
        Controller error code raised at ``error_at`` (default C31, collision).
    """

    latency: float = 0.0
    latency_at: float | None = None
    stall_at: float | None = None
    stall_duration: float = 0.19
    stall_register: int | None = None
    drop_at: float | None = None
    error_at: float | None = None
    error_code: int = 31

    def __post_init__(self) -> None:
        if not 0.0 <= self.latency <= 10.0:
            raise Sim2RealError(f"fault latency must be in [0, 10] s, got {self.latency}")
        if not 0.0 <= self.stall_duration <= 10.0:
            raise Sim2RealError(f"stall duration must be in [0, 10] s, got {self.stall_duration}")
        if self.stall_register is not None and not 1 <= self.stall_register <= 255:
            raise Sim2RealError(f"stall register must be in 1..255, got {self.stall_register}")
        for name in ("latency_at", "stall_at", "drop_at", "error_at"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0.0):
                raise Sim2RealError(f"fault time {name} must be >= 0 s, got {value}")
        if not 1 <= self.error_code <= 255:
            raise Sim2RealError(f"fault error code must be in 1..255, got {self.error_code}")


def _default_servo() -> ServoParams:
    return ServoParams(tau=0.05, delay=0.01)


@dataclass(frozen=True)
class EmulatorConfig:
    """Configuration of an :class:`XArmEmulator`.

    Attributes
    ----------
    host : str
        Loopback address to bind (127.0.0.0/8); run several emulators on different addresses.
    command_port : int
        Command port (502 on a real controller; any port the SDK is pointed at).
    servo : ServoParams
        True servo parameters of the emulated joints.
    initial_joints : tuple of float, length 6
        Joint positions at start (rad).
    joint_limits : tuple of (float, float), length 6
        Controller position limits (rad); leaving them raises C23.
    version : str
        Answer to the firmware-version query.
    tick_rate : float
        Internal control tick (Hz): limit checks, servo_j tracking, faults, the tick hook.
    servo_j_time_constant : float or None
        Time constant (s) of the servo_j position correction in mode 1; None means
        ``4 * (servo.tau + servo.delay)``, which keeps the loop well damped.
    reject_wrong_mode : bool
        Answer motion commands sent in the wrong mode with the "invalid" status bit
        (the real controller's answer is undocumented; they are ignored either way).
    faults : FaultConfig
        Injected faults.
    report_ports : tuple of int
        Report ports to serve (subset of 30001, 30002, 30003).
    """

    host: str = "127.0.0.1"
    command_port: int = 502
    servo: ServoParams = field(default_factory=_default_servo)
    initial_joints: tuple[float, ...] = (0.0,) * N_JOINTS
    joint_limits: tuple[tuple[float, float], ...] = XARM6_JOINT_LIMITS
    version: str = DEFAULT_VERSION
    tick_rate: float = 250.0
    servo_j_time_constant: float | None = None
    reject_wrong_mode: bool = True
    faults: FaultConfig = field(default_factory=FaultConfig)
    report_ports: tuple[int, ...] = (wire.REPORT_PORT_NORMAL, wire.REPORT_PORT_RICH, wire.REPORT_PORT_REAL)

    def __post_init__(self) -> None:
        try:
            address = ipaddress.IPv4Address(self.host)
        except ValueError:
            raise Sim2RealError(f"emulator host must be a dotted IPv4 loopback address, got {self.host!r}") from None
        if not address.is_loopback:
            raise Sim2RealError(f"emulator host must be a loopback address (127.0.0.N), got {self.host}")
        if not 1 <= self.command_port <= 65535:
            raise Sim2RealError(f"command port must be in 1..65535, got {self.command_port}")
        if self.command_port in wire.REPORT_SIZES:
            raise Sim2RealError(f"command port {self.command_port} collides with a report port")
        if len(self.initial_joints) != N_JOINTS or not all(math.isfinite(q) for q in self.initial_joints):
            raise Sim2RealError(f"initial joints must be {N_JOINTS} finite angles (rad)")
        if len(self.joint_limits) != N_JOINTS or any(lo >= hi for lo, hi in self.joint_limits):
            raise Sim2RealError(f"joint limits must be {N_JOINTS} (lower, upper) pairs with lower < upper")
        for k, (q, (low, high)) in enumerate(zip(self.initial_joints, self.joint_limits, strict=True)):
            if not low <= q <= high:
                raise Sim2RealError(f"initial joint {k + 1} at {q} rad is outside its limits "
                                    f"[{low:.4g}, {high:.4g}] rad")
        if not 10.0 <= self.tick_rate <= 2000.0:
            raise Sim2RealError(f"tick rate must be in [10, 2000] Hz, got {self.tick_rate}")
        if set(self.report_ports) - set(wire.REPORT_SIZES):
            raise Sim2RealError(f"report ports must be among {sorted(wire.REPORT_SIZES)}")


@dataclass(frozen=True)
class EmulatedState:
    """A consistent snapshot of the emulated arm.

    Attributes
    ----------
    t : float
        Time of the snapshot (s, ``time.monotonic``).
    q, v : ndarray, shape (6,)
        True joint positions (rad) and velocities (rad/s).
    state, mode, error_code, warn_code : int
        Controller registers.
    enabled : bool
        All motors enabled.
    """

    t: float
    q: FloatArray
    v: FloatArray
    state: int
    mode: int
    error_code: int
    warn_code: int
    enabled: bool
