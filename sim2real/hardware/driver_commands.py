"""The command path of :class:`~sim2real.hardware.driver.XArmDriver`: SDK exchanges timed and judged,
SDK return codes turned into faults, motion commands clamped and sent.

:class:`Commands`, a part of the driver on its :class:`~sim2real.hardware.driver_state.DriverState`
(see :mod:`sim2real.hardware.driver_state`):

* ``_exchange``: one SDK call under the supervisor's eye; a reply later than the stall budget
  latches a ``stall``, any other round trip feeds the ``latency`` window;
* ``_start_up`` and ``_judge_link_at_start``: the exchanges of ``start()`` feed the same window
  (never a stall: nothing moves yet), filled before any motion command can leave, so a link
  already too slow at connection latches its ``latency`` fault before the arm is commanded at all;
* ``_check``: an SDK return code as a latched fault (``disconnected``, ``timeout``,
  ``controller_error``, ``not_ready``, ``rejected``, ``sdk``);
* ``_send``: clamp a joint-velocity command ((6,) rad/s) to the velocity limit and away from
  the joint limits, send it (mode 4: ``vc_set_joint_velocity``; mode 1: the next
  ``set_servo_angle_j`` target, (6,) rad) and record it; an arm that stopped itself
  (``auto_stop``) is not moved again.

Times are ``time.monotonic()`` seconds.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.hardware.codes import describe_error, describe_warn, mode_name, state_name
from sim2real.hardware.driver_state import LOG, DriverState, Exchange
from sim2real.hardware.driver_stop import StopPath
from sim2real.hardware.driver_types import CommandRecord, Fault, FloatArray
from sim2real.hardware.link_timing import PendingRequest, tcp_times

# SDK return codes (xarm/x3/code.py APIState and XCONF.UxbusState).
_SDK_OK, _SDK_ERROR, _SDK_WARNING, _SDK_TIMEOUT, _SDK_NOT_READY, _SDK_INVALID = 0, 1, 2, 3, 9, 10
_SDK_NOT_CONNECTED = -1
_T = TypeVar("_T")


class Commands:
    """SDK exchanges and motion commands of the driver (see the module docstring).

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

    # --- exchanges -----------------------------------------------------------------------
    def exchange(self, what: str, call: Callable[..., _T], *args: Any, started: float | None = None,
                  judge_stall: bool = True, **kwargs: Any) -> tuple[_T, float, float, PendingRequest | None]:
        """Run one SDK exchange under the supervisor's eye; returns (result, sent_at, replied_at, written).

        The caller holds ``state.io``; ``started`` (monotonic s) is the send time if the caller
        took it already. ``written`` is the request this exchange wrote to the socket (None when
        nothing left: the gate refused it, or the SDK failed before writing). A reply that came too
        late for the stall budget latches a stall here (the supervisor may not have had a CPU
        meanwhile); otherwise its round trip feeds the latency judgement. With ``judge_stall``
        False (the start-up exchanges) every measured round trip feeds the latency judgement only.
        """
        gate = self.state.gate
        before = gate.mine() if gate is not None else None
        self.state.run_delay.register(threading.get_native_id())
        sent_at = time.monotonic() if started is None else started
        self.state.inflight = Exchange(what)
        try:
            result = call(*args, **kwargs)
        finally:
            self.state.inflight = None
        replied_at = time.monotonic()
        request = gate.mine() if gate is not None else None
        written = request if request is not None and request is not before else None
        if gate is not None and written is not None and not gate.closed:
            self.judge_reply(what, written, replied_at, judge_stall)
        return result, sent_at, replied_at, written

    def judge_reply(self, what: str, request: PendingRequest, replied_at: float, judge_stall: bool = True) -> None:
        """A reply later than the stall budget latches a stall (unless not ``judge_stall``); any
        other feeds the latency window."""
        round_trip = self.round_trip(request, replied_at)
        if round_trip is None:
            return
        budget = self.state.config.stall_budget
        if judge_stall and round_trip > budget:
            self.stop.latch(Fault("stall", f"the xArm link stalled: the reply to {what} came {round_trip * 1e3:.0f} ms "
                                       f"after the request left this host (limit {budget * 1e3:.0f} ms)"))
        else:
            self.note_round_trip(what, round_trip)

    def round_trip(self, request: PendingRequest, replied_at: float) -> float | None:
        """From ``request`` leaving this host to its reply arriving (s, kernel time); None when
        there was no reply or something else left after it (not measurable)."""
        times = tcp_times(self.stop.sdk_socket())
        if times is not None and request.received_before is not None:
            if times.received_bytes <= request.received_before or times.sent_ago < times.received_ago:
                return None
            return times.sent_ago - times.received_ago
        return (request.answered_at or replied_at) - request.written_at

    def note_round_trip(self, what: str, round_trip: float) -> None:
        """Add one round trip (s, kernel time) to the latency window; once the window holds
        ``latency_window`` of them, latch a ``latency`` fault when even the fastest is over
        ``latency_budget``. Judged at every exchange from then on (a sliding window): from
        ``start()``'s first exchanges on, so the first motion command already has a full window."""
        cfg = self.state.config
        self.state.round_trips.append(round_trip)
        if len(self.state.round_trips) == cfg.latency_window:
            fastest = min(self.state.round_trips)
            if fastest > cfg.latency_budget:
                self.stop.latch(Fault("latency", f"the xArm link is too slow: even the fastest of the last "
                                             f"{cfg.latency_window} exchanges took {fastest * 1e3:.1f} ms (limit "
                                             f"{cfg.latency_budget * 1e3:.0f} ms; last: {what})"))

    def start_up(self, what: str, call: Callable[..., _T], *args: Any) -> _T:
        """One exchange of ``start()`` (the caller holds ``state.io``); returns the SDK's result.

        Its round trip (kernel time) feeds the latency window like any other, so that the link is
        judged before the first motion command; it is never a stall: nothing moves yet, and the
        controller's own work on a state change (``motion_enable``, ``set_state``) may take longer
        than a motion command's budget. A link slow for all of a window's exchanges is slow."""
        result, _, _, _ = self.exchange(what, call, *args, judge_stall=False)
        return result

    def judge_link_at_start(self) -> None:
        """State reads until the latency window is full (at most ``latency_window`` of them), when
        the start-up exchanges left it short: a round trip not measurable (another thread's request
        left after it), or a window longer than them. The caller holds ``state.io``."""
        cfg = self.state.config
        for _ in range(cfg.latency_window):
            if len(self.state.round_trips) >= cfg.latency_window or self.state.fault is not None:
                return
            code, _ = self.start_up("get_state", self.state.arm.get_state)
            self.check(code, "get_state")

    def check(self, code: int, what: str) -> None:
        """Turn an SDK return code into a latched fault (no-op for success and warnings)."""
        if code in (_SDK_OK, _SDK_WARNING) or self.state.fault is not None:
            return
        if code == _SDK_NOT_CONNECTED or not self.state.connected or self.stop.link_closed():
            self.stop.latch(Fault("disconnected", f"lost the connection to the xArm controller at {self.state.where} "
                                              f"during {what}"))
        elif code == _SDK_TIMEOUT:
            self.stop.latch(Fault("timeout", f"no reply from the xArm controller at {self.state.where} to {what} "
                                             f"within {self.state.config.command_timeout:g} s"))
        elif code in (_SDK_ERROR, _SDK_NOT_READY):
            self.check_error_codes(what)
            if self.state.fault is None:
                _, arm_state = self.state.arm.get_state()
                self.stop.latch(Fault("not_ready", f"xArm not ready for {what}: state {arm_state} "
                                                   f"({state_name(arm_state)})"))
        elif code == _SDK_INVALID:
            mode = self.state.arm.mode
            self.stop.latch(Fault("rejected", f"the xArm controller rejected {what} (invalid in mode {mode}: "
                                              f"{mode_name(mode)})"))
        else:
            self.stop.latch(Fault("sdk", f"xArm SDK returned code {code} for {what}"))

    def check_error_codes(self, what: str) -> None:
        (code, (error_code, warn_code)), _, _, _ = self.exchange("get_err_warn_code", self.state.arm.get_err_warn_code)
        if code != 0:
            self.check(code, "get_err_warn_code")
            return
        if error_code:
            self.stop.latch(Fault("controller_error", f"xArm controller error {describe_error(error_code)} "
                                                  f"(seen at {what}); the arm is stopped", code=int(error_code)))
        elif warn_code:
            LOG.warning("xArm warning %s", describe_warn(warn_code))


    # --- motion commands -----------------------------------------------------------------
    def clamp(self, requested: FloatArray) -> FloatArray:
        sent = np.clip(requested, -self.state.config.max_velocity, self.state.config.max_velocity)
        if self.state.last_q is not None:
            ahead = self.state.last_q + sent * self.state.config.limit_lookahead
            sent = np.where((ahead <= self.state.lower) & (sent < 0.0), 0.0, sent)
            sent = np.where((ahead >= self.state.upper) & (sent > 0.0), 0.0, sent)
        return sent

    def send(self, requested: FloatArray, stamp: float, source: str) -> CommandRecord:
        """Clamp and send one command (the caller holds ``state.io``); raises if it did not leave."""
        sent = self.clamp(requested)
        started = time.monotonic()
        self.latch_if_auto_stopped(sent, started)
        if source == "caller":  # fresh from the moment it leaves: the watchdog must not zero it in flight
            self.state.last_fresh_at = started
            self.state.zero_sent = False
        assert self.state.gate is not None
        what, target, (code, sent_at, replied_at, request) = self.command(sent, started)
        if request is None:
            self.not_sent(code, what)
        if self.state.config.mode == 1 and code == 0 and self.state.fault is None:
            self.state.servo_target = target
        self.state.last_send_at = sent_at
        self.state.last_sent_moving = bool(np.any(sent))
        if source == "caller":
            self.state.zero_sent = not np.any(sent)
        record = CommandRecord(stamp, sent_at, replied_at, requested.copy(), sent, target,
                               bool(np.any(sent != requested)), source, int(code), request.written_at)
        self.state.history.append(record)
        self.state.commands_sent += 1
        self.check(code, what)
        return record

    def latch_if_auto_stopped(self, sent: FloatArray, now: float) -> None:
        """Mode 4: when no command of any kind left for longer than the controller's auto-stop
        ``command_duration`` after one that asked for motion, the arm has stopped itself in motion
        (this process was frozen or starved that long): latch an ``auto_stop`` fault rather than
        move it again (raise for a motion command; the watchdog's zero, which may be the first to
        notice, still goes out). An arm last commanded to rest (after start, or a zero) may start.

        Zero commands keep the stream alive (the watchdog sends them when the caller is late), so
        this happens only when the whole process (watchdog included) got no CPU for that long.
        """
        cfg = self.state.config
        gap = now - self.state.last_send_at
        if (cfg.mode != 4 or not self.state.last_sent_moving or not math.isfinite(gap) or gap <= cfg.command_duration
                or self.state.fault is not None):
            return
        self.stop.latch(Fault("auto_stop", f"no command left for {gap * 1e3:.0f} ms, longer than the controller's "
                                       f"{cfg.command_duration * 1e3:.0f} ms auto-stop: this process was frozen or "
                                       "starved, the arm stopped itself and is not moved again (restart the run)"))
        if np.any(sent):  # a zero (the watchdog's) may still go out; motion never
            self.stop.raise_if_faulted()

    def command(self, sent: FloatArray, started: float
                 ) -> tuple[str, FloatArray | None, tuple[int, float, float, PendingRequest | None]]:
        """Mode 4: the velocity command; mode 1: the next servo_j target. Returns what was called,
        the target (mode 1) and the exchange's (code, sent_at, replied_at, written)."""
        cfg = self.state.config
        if cfg.mode == 4:
            what = "vc_set_joint_velocity"
            return what, None, self.exchange(what, self.state.arm.vc_set_joint_velocity, sent.tolist(), is_radian=True,
                                              duration=cfg.command_duration, started=started)
        what = "set_servo_angle_j"
        step = min(max(started - self.state.last_send_at, 0.0), cfg.servo_max_step_time)
        assert self.state.servo_target is not None
        target = np.clip(self.state.servo_target + sent * step, self.state.lower, self.state.upper)
        return what, target, self.exchange(what, self.state.arm.set_servo_angle_j, target.tolist(), is_radian=True,
                                            started=started)

    def not_sent(self, code: int, what: str) -> NoReturn:
        """A command that never left (the gate refused it, or the SDK failed before writing): raise."""
        if self.state.gate is None or not self.state.gate.closed:
            self.check(code, what)
        self.stop.raise_if_faulted()
        raise Sim2RealError(f"xArm driver is stopping: {what} was not sent")
