"""The fault latch and the stop path of :class:`~sim2real.hardware.driver.XArmDriver`.

:class:`_StopPath`, a part of the driver (see :mod:`sim2real.hardware.driver_state`):

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
from sim2real.hardware.driver_state import LOG, _DriverState
from sim2real.hardware.driver_types import N_JOINTS, ControllerError, Fault, HardwareError
from sim2real.hardware.link_timing import STOP_TRANSACTION, tcp_times

#: Fault kinds that say the link itself is suspect (the stop also goes over a second connection).
_LINK_FAULTS = frozenset({"stall", "latency", "timeout"})


class _StopPath(_DriverState):
    """The latch and the stop path of the driver (see the module docstring)."""

    # --- the latch -----------------------------------------------------------------------
    def _raise_if_faulted(self) -> None:
        fault = self._fault
        if fault is not None:
            if fault.kind == "controller_error":
                raise ControllerError(fault)
            raise HardwareError(fault)

    def _latch(self, fault: Fault) -> None:
        """Close the gate (no motion command leaves from now on), record the first fault with that
        moment as its time, and stop the arm at once (never waits for the SDK's lock)."""
        with self._stop_lock:
            if self._fault is not None:
                return
            gate = self._gate
            at = gate.close(self.config.stop_timeout) if gate is not None else time.monotonic()
            fault = dataclasses.replace(fault, at=at)
            self._fault = fault
            self._running = False
        suspect = fault.kind in _LINK_FAULTS or self._request_unanswered()
        self._emergency_stop(second_link=suspect and self.config.second_link_stop)
        if fault.planned:
            LOG.info("xArm stopped as planned: %s", fault.message)
        else:
            LOG.error("xArm driver fault (%s): %s", fault.kind, fault.message)

    # --- the stop path -------------------------------------------------------------------
    def _sdk_socket(self) -> socket.socket | None:
        with contextlib.suppress(Exception):
            return self._arm.arm._stream.com  # type: ignore[no-any-return]
        return None

    def _link_closed(self) -> bool:
        """Whether the controller closed (or reset) the command link; never blocks or reads."""
        sock = self._sdk_socket()
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

    def _reply_arrived(self, since: float) -> bool:
        """Whether any reply byte reached this host after ``since`` (monotonic s) for the exchange in flight."""
        with contextlib.suppress(Exception):
            arm = self._arm.arm
            if arm.arm_cmd.last_comm_time >= since or not arm._stream.rx_que.empty():
                return True
            poller = select.poll()
            poller.register(arm._stream.com.fileno(), select.POLLIN)
            return bool(poller.poll(0))
        return False

    def _request_unanswered(self) -> bool:
        """Whether the last request on the command socket has had no reply byte yet."""
        request = self._gate.request if self._gate is not None else None
        if request is None:
            return False
        times = tcp_times(self._sdk_socket())
        if times is not None and request.received_before is not None:
            return times.received_bytes <= request.received_before
        return request.answered_at is None and not self._reply_arrived(request.written_at)

    def _stop_frames(self, protocol: int, with_velocity: bool) -> bytes:
        """Zero velocity (mode 4), set_state(4), set_mode(0), set_state(4) as raw request frames."""
        frames = b""
        if with_velocity and self.config.mode == 4:
            params = wire.pack_floats([0.0] * 7) + bytes([1]) + struct.pack("<f", self.config.command_duration)
            frames += wire.encode_request(STOP_TRANSACTION, protocol, wire.Register.VC_SET_JOINTV, params)
        frames += wire.encode_request(STOP_TRANSACTION, protocol, wire.Register.SET_STATE, bytes([4]))
        frames += wire.encode_request(STOP_TRANSACTION, protocol, wire.Register.SET_MODE, bytes([0]))
        frames += wire.encode_request(STOP_TRANSACTION, protocol, wire.Register.SET_STATE, bytes([4]))
        return frames

    def _emergency_stop(self, second_link: bool = False) -> None:
        """Stop the arm now, superseding anything queued: raw stop frames on the SDK's socket
        (through the gate, not the command lock a stalled exchange holds), or over a fresh
        connection when the link is gone; with ``second_link`` over both at once (the fresh
        connection from a helper thread, so that neither path waits for the other)."""
        if self._arm is None:
            return
        if self._link_closed():
            self._stop_over_fresh_link()
            return
        if second_link:
            self._second_stop = threading.Thread(target=self._stop_over_fresh_link, kwargs={"parallel": True},
                                                 name="xarm-second-stop", daemon=True)
            self._second_stop.start()
        written = False
        with contextlib.suppress(Exception):
            port = self._arm.arm._stream
            protocol = int(self._arm.arm.arm_cmd.get_protocol_identifier())
            written = port.write(self._stop_frames(protocol, with_velocity=True)) == 0
        if written:
            self._note_stop_sent()
        elif not second_link:
            self._stop_over_fresh_link()

    def _note_stop_sent(self) -> None:
        with self._stop_lock:
            if self.stop_sent_at is None:
                self.stop_sent_at = time.monotonic()

    def _stop_over_fresh_link(self, parallel: bool = False) -> bool:
        """Send the stop frames over a new TCP connection (bounded by ``stop_timeout``); True if answered.

        ``parallel``: the stop also went onto the command socket, so a failure here is logged as
        a warning only."""
        cfg = self.config
        deadline = time.monotonic() + cfg.stop_timeout
        try:
            with socket.create_connection((cfg.ip, cfg.command_port), timeout=cfg.stop_timeout) as sock:
                sock.sendall(self._stop_frames(wire.PROTOCOL_PRIVATE, with_velocity=True))
                self._note_stop_sent()
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
                    "xArm at %s: could not send the stop over a fresh connection: %s", self.where, err)
            return False

    def _halt(self) -> None:
        """Best-effort zero velocity (mode 4); in mode 1 the stop (state 4) that follows halts the arm."""
        with contextlib.suppress(Exception):
            if self.config.mode == 4:
                self._arm.vc_set_joint_velocity([0.0] * N_JOINTS, is_radian=True,
                                                duration=self.config.command_duration)
