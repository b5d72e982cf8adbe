"""Connection helpers of :class:`~sim2real.hardware.driver.XArmDriver`: opening the vendor SDK with a
deadline, the preflight checks, leaving the arm safe and disconnecting.

:class:`Connection`, a part of the driver on its :class:`~sim2real.hardware.driver_state.DriverState`
(see :mod:`sim2real.hardware.driver_state`); the public ``connect()``, ``start()`` and ``stop()`` that
call these are the driver's own.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any

from sim2real.errors import Sim2RealError
from sim2real.hardware import protocol as wire
from sim2real.hardware.codes import describe_error, describe_warn
from sim2real.hardware.driver_state import LOG, DriverState
from sim2real.hardware.driver_stop import LINK_FAULTS, StopPath
from sim2real.hardware.driver_types import Preflight

#: Longest wait (s) for the SDK's own threads when disconnecting.
_DISCONNECT_WAIT = 2.0
#: The SDK reads its command port from a process-wide class attribute; serialise patching it.
_SDK_PORT_LOCK = threading.Lock()


class Connection:
    """Opening and closing the driver's SDK connection (see the module docstring).

    Parameters
    ----------
    state : DriverState
        The driver's state, shared with its other parts.
    stop : StopPath
        The driver's latch and stop path.
    """

    def __init__(self, state: DriverState, stop: StopPath) -> None:
        self.state = state
        self.stop = stop

    def open_sdk(self, deadline_s: float) -> Any:
        """Construct ``XArmAPI`` and connect it in a helper thread with a deadline."""
        from xarm.core.config.x_config import XCONF
        from xarm.wrapper import XArmAPI

        cfg = self.state.config
        arm = XArmAPI(cfg.ip, is_radian=True, do_not_open=True, forbid_uds=True, report_type=cfg.report_type)
        outcome: dict[str, BaseException | None] = {"error": None}

        def open_arm() -> None:
            try:
                arm.connect()
            except BaseException as err:
                outcome["error"] = err

        previous_default = socket.getdefaulttimeout()
        with _SDK_PORT_LOCK:
            saved_port = XCONF.SocketConf.TCP_CONTROL_PORT
            XCONF.SocketConf.TCP_CONTROL_PORT = cfg.command_port
            try:
                worker = threading.Thread(target=open_arm, name="xarm-sdk-connect", daemon=True)
                worker.start()
                worker.join(deadline_s)
            finally:
                XCONF.SocketConf.TCP_CONTROL_PORT = saved_port
                socket.setdefaulttimeout(previous_default)  # the SDK sets a process-wide 1 s default
        if worker.is_alive():
            with contextlib.suppress(Exception):
                arm.disconnect()
            raise Sim2RealError(f"the xArm SDK did not finish connecting to {self.state.where} within {deadline_s:g} s")
        if outcome["error"] is not None or not arm.connected:
            with contextlib.suppress(Exception):
                arm.disconnect()
            reason = outcome["error"] or "not connected"
            raise Sim2RealError(f"the xArm SDK could not connect to {self.state.where}: {reason}")
        return arm

    def preflight(self, firmware: wire.FirmwareVersion) -> Preflight:
        arm = self.state.arm
        code, (error_code, warn_code) = arm.get_err_warn_code()
        if code != 0:
            raise Sim2RealError(f"xArm at {self.state.where} did not report its error codes (SDK code {code})")
        code, state = arm.get_state()
        if code != 0:
            raise Sim2RealError(f"xArm at {self.state.where} did not report its state (SDK code {code})")
        deadline = time.monotonic() + 0.5  # the mode is only known from the report stream
        while not arm.arm.reported and time.monotonic() < deadline:
            time.sleep(0.01)
        preflight = Preflight(firmware, int(error_code), int(warn_code), int(state), int(arm.mode))
        if error_code:
            raise Sim2RealError(f"xArm at {self.state.where} is not ready: controller error "
                                f"{describe_error(error_code)}; remove its cause and clear it before starting")
        if state == 1:
            raise Sim2RealError(f"xArm at {self.state.where} is not ready: it is moving (state 1); "
                                f"another client may be driving it")
        if warn_code:
            LOG.warning("xArm at %s reports warning %s", self.state.where, describe_warn(warn_code))
        return preflight

    def leave_safe(self, use_sdk: bool) -> None:
        """Zero velocity (a planned stop), then mode 0 and state 4: through the SDK on a healthy
        link, else over a fresh connection (the stop frames of a fault went out already)."""
        fault = self.state.fault
        suspect = fault is not None and fault.kind in LINK_FAULTS
        if use_sdk and not suspect and self.state.connected and not self.stop.link_closed():
            if self.state.stop_sent_at is None:
                self.stop.halt()
            with contextlib.suppress(Exception):
                self.state.arm.set_mode(0)
            with contextlib.suppress(Exception):
                self.state.arm.set_state(4)
        elif fault is not None or self.state.commands_sent:
            self.stop.stop_over_fresh_link(parallel=self.state.stop_sent_at is not None)

    def disconnect(self) -> None:
        """Close the SDK's connections; its threads get :data:`_DISCONNECT_WAIT` s to end."""
        arm, self.state.arm = self.state.arm, None
        if arm is not None:
            def disconnect() -> None:
                with contextlib.suppress(Exception):
                    arm.disconnect()

            worker = threading.Thread(target=disconnect, name="xarm-sdk-disconnect", daemon=True)
            worker.start()
            worker.join(_DISCONNECT_WAIT)
            if worker.is_alive():
                LOG.warning("the xArm SDK did not finish disconnecting from %s within %g s; its threads end "
                            "with the process", self.state.where, _DISCONNECT_WAIT)
        self.state.run_delay.close()
