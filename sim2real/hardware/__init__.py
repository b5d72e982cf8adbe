"""The real xArm 6 over ``xarm-python-sdk``, and a wire-protocol emulator of its controller.

* :class:`XArmDriver` (``driver``): connect with preflight, start, stream joint velocities
  (mode 4) or servo targets (mode 1) with a watchdog, read joint states, stop safely; its parts,
  objects that share one ``DriverState`` (``driver_state``): the fault latch and the stop path
  (``driver_stop``), timed SDK exchanges and motion commands (``driver_commands``), the
  supervisor thread and command watchdog (``driver_supervisor``), opening the SDK, preflight and
  disconnecting (``driver_connection``); its configuration and reports (``driver_types``), link
  timing and send gate (``link_timing``), Ctrl-C and SIGTERM handling (``signal_guard``), bounded
  exit after a signal (``exit_deadline``), first contact (``probe``).
* :class:`XArmEmulator` (``emulator``): a loopback controller the unmodified SDK talks to,
  with the servo model of :mod:`sim2real.sim.servo` and fault injection; its configuration
  (``emulator_config``) and its state machine and joint physics (``emulator_arm``).

Never imports rclpy.
"""

from sim2real.hardware.address import require_robot_address
from sim2real.hardware.codes import describe_error, describe_warn, error_meaning, mode_name, state_name, warn_meaning
from sim2real.hardware.driver import XArmDriver
from sim2real.hardware.driver_types import (
    CommandRecord,
    ControllerError,
    DriverConfig,
    DriverStatus,
    Fault,
    HardwareError,
    Preflight,
)
from sim2real.hardware.emulator import XArmEmulator
from sim2real.hardware.emulator_config import EmulatedState, EmulatorConfig, FaultConfig
from sim2real.hardware.limits import XARM6_JOINT_LIMITS, XARM6_MAX_JOINT_VELOCITY
from sim2real.hardware.probe import probe_controller

__all__ = [
    "XARM6_JOINT_LIMITS",
    "XARM6_MAX_JOINT_VELOCITY",
    "CommandRecord",
    "ControllerError",
    "DriverConfig",
    "DriverStatus",
    "EmulatedState",
    "EmulatorConfig",
    "Fault",
    "FaultConfig",
    "HardwareError",
    "Preflight",
    "XArmDriver",
    "XArmEmulator",
    "describe_error",
    "describe_warn",
    "error_meaning",
    "mode_name",
    "probe_controller",
    "require_robot_address",
    "state_name",
    "warn_meaning",
]
