"""The fault latch and the stop path of :class:`~sim2real.hardware.driver.XArmDriver`.

:class:`StopPath`, a part of the driver on its :class:`~sim2real.hardware.driver_state.DriverState`
(see :mod:`sim2real.hardware.driver_state`):

* the latch (``_latch``): on the first fault, close the send gate (from then on no frame that
  could move the arm leaves), record the fault with that moment as its time, and stop the arm;
* the stop (``_emergency_stop``): zero velocity, ``set_state(4)``, ``set_mode(0)``,
  ``set_state(4)`` as raw frames straight onto the command socket (never waiting for the SDK's
  lock), also over a second, fresh connection when the link is suspect, or over a fresh
  connection only when the link is gone (bounded by ``stop_timeout``);
* the link as seen without blocking or reading: closed, a reply arrived, a request unanswered.

Times are ``time.monotonic()`` seconds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import select
import socket
import struct
import threading
import time

from sim2real.hardware import protocol as wire
from sim2real.hardware.driver_state import LOG, DriverState
from sim2real.hardware.driver_types import N_JOINTS, ControllerError, Fault, HardwareError
from sim2real.hardware.link_timing import STOP_TRANSACTION, tcp_times

#: Fault kinds that say the link itself is suspect (the stop also goes over a second connection).
LINK_FAULTS = frozenset({"stall", "latency", "timeout"})


class StopPath:
    """The latch and the stop path of the driver (see the module docstring).

    Parameters
    ----------
    state : DriverState
        The driver's state, shared with its other parts.
    """

    def __init__(self, state: DriverState) -> None:
        self.state = state

    # --- the latch -----------------------------------------------------------------------
    def raise_if_faulted(self) -> None:
        """Raise the latched fault (:class:`ControllerError` for a controller error), if any."""
        fault = self.state.fault
        if fault is not None:
            if fault.kind == "controller_error":
                raise ControllerError(fault)
            raise HardwareError(fault)

    def latch(self, fault: Fault) -> None:
        """Close the gate (no motion command leaves from now on), record the first fault with that
        moment as its time, and stop the arm at once (never waits for the SDK's lock)."""
        with self.state.stop_lock:
            if self.state.fault is not None:
                return
            gate = self.state.gate
            at = gate.close(self.state.config.stop_timeout) if gate is not None else time.monotonic()
            fault = dataclasses.replace(fault, at=at)
            self.state.fault = fault
            self.state.running = False
        suspect = fault.kind in LINK_FAULTS or self.request_unanswered()
        self.emergency_stop(second_link=suspect and self.state.config.second_link_stop)
        if fault.planned:
            LOG.info("xArm stopped as planned: %s", fault.message)
        else:
            LOG.error("xArm driver fault (%s): %s", fault.kind, fault.message)

    # --- the stop path -------------------------------------------------------------------
    def sdk_socket(self) -> socket.socket | None:
        """The SDK's command socket, or None when there is none."""
        with contextlib.suppress(Exception):
            return self.state.arm.arm._stream.com  # type: ignore[no-any-return]
        return None

    def link_closed(self) -> bool:
        """Whether the controller closed (or reset) the command link; never blocks or reads."""
        sock = self.sdk_socket()
        if sock is None:
            return True
        try:
            fd = sock.fileno()
            if fd < 0:
                return True
            poller = select.poll()
            poller.register(fd, select.POLLRDHUP | select.POLLHUP | select.POLLERR)
            return bool(poller.poll(0))
        except (OSError, ValueError):
            return True

    def reply_arrived(self, since: float) -> bool:
        """Whether any reply byte reached this host after ``since`` (monotonic s) for the exchange in flight."""
        with contextlib.suppress(Exception):
            arm = self.state.arm.arm
            if arm.arm_cmd.last_comm_time >= since or not arm._stream.rx_que.empty():
                return True
            poller = select.poll()
            poller.register(arm._stream.com.fileno(), select.POLLIN)
            return bool(poller.poll(0))
        return False

    def request_unanswered(self) -> bool:
        """Whether the last request on the command socket has had no reply byte yet."""
        request = self.state.gate.request if self.state.gate is not None else None
        if request is None:
            return False
        times = tcp_times(self.sdk_socket())
        if times is not None and request.received_before is not None:
            return times.received_bytes <= request.received_before
        return request.answered_at is None and not self.reply_arrived(request.written_at)

    def stop_frames(self, protocol: int, with_velocity: bool) -> bytes:
        """Zero velocity (mode 4), set_state(4), set_mode(0), set_state(4) as raw request frames."""
        frames = b""
        if with_velocity and self.state.config.mode == 4:
            params = wire.pack_floats([0.0] * 7) + bytes([1]) + struct.pack("<f", self.state.config.command_duration)
            frames += wire.encode_request(STOP_TRANSACTION, protocol, wire.Register.VC_SET_JOINTV, params)
        frames += wire.encode_request(STOP_TRANSACTION, protocol, wire.Register.SET_STATE, bytes([4]))
        frames += wire.encode_request(STOP_TRANSACTION, protocol, wire.Register.SET_MODE, bytes([0]))
        frames += wire.encode_request(STOP_TRANSACTION, protocol, wire.Register.SET_STATE, bytes([4]))
        return frames

    def emergency_stop(self, second_link: bool = False) -> None:
        """Stop the arm now, superseding anything queued: raw stop frames on the SDK's socket
        (through the gate, not the command lock a stalled exchange holds), or over a fresh
        connection when the link is gone; with ``second_link`` over both at once (the fresh
        connection from a helper thread, so that neither path waits for the other)."""
        if self.state.arm is None:
            return
        if self.link_closed():
            self.stop_over_fresh_link()
            return
        if second_link:
            self.state.second_stop = threading.Thread(target=self.stop_over_fresh_link, kwargs={"parallel": True},
                                                 name="xarm-second-stop", daemon=True)
            self.state.second_stop.start()
        written = False
        with contextlib.suppress(Exception):
            port = self.state.arm.arm._stream
            protocol = int(self.state.arm.arm.arm_cmd.get_protocol_identifier())
            written = port.write(self.stop_frames(protocol, with_velocity=True)) == 0
        if written:
            self.note_stop_sent()
        elif not second_link:
            self.stop_over_fresh_link()

    def note_stop_sent(self) -> None:
        with self.state.stop_lock:
            if self.state.stop_sent_at is None:
                self.state.stop_sent_at = time.monotonic()

    def stop_over_fresh_link(self, parallel: bool = False) -> bool:
        """Send the stop frames over a new TCP connection (bounded by ``stop_timeout``); True if answered.

        ``parallel``: the stop also went onto the command socket, so a failure here is logged as
        a warning only."""
        cfg = self.state.config
        deadline = time.monotonic() + cfg.stop_timeout
        try:
            with socket.create_connection((cfg.ip, cfg.command_port), timeout=cfg.stop_timeout) as sock:
                sock.sendall(self.stop_frames(wire.PROTOCOL_PRIVATE, with_velocity=True))
                self.note_stop_sent()
                replies = 0
                buffer = bytearray()
                expected = 4 if cfg.mode == 4 else 3
                while replies < expected:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0.0:
                        return False
                    sock.settimeout(remaining)
                    chunk = sock.recv(4096)
                    if not chunk:
                        return False
                    buffer.extend(chunk)
                    while len(buffer) >= wire.HEADER_SIZE and \
                            len(buffer) >= wire.HEADER_SIZE + wire.HEADER.unpack_from(buffer, 0)[2]:
                        del buffer[:wire.HEADER_SIZE + wire.HEADER.unpack_from(buffer, 0)[2]]
                        replies += 1
                return True
        except OSError as err:
            LOG.log(logging.WARNING if parallel else logging.ERROR,
                    "xArm at %s: could not send the stop over a fresh connection: %s", self.state.where, err)
            return False

    def halt(self) -> None:
        """Best-effort zero velocity (mode 4); in mode 1 the stop (state 4) that follows halts the arm."""
        with contextlib.suppress(Exception):
            if self.state.config.mode == 4:
                self.state.arm.vc_set_joint_velocity([0.0] * N_JOINTS, is_radian=True,
                                                duration=self.state.config.command_duration)
