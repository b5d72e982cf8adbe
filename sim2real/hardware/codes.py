"""Meanings of the xArm controller's error, warning, state and mode codes.

The titles of controller error (``C<n>``) and warning (``W<n>``) codes come from the
tables shipped with ``xarm-python-sdk`` (``xarm.core.config.x_code``), so the driver and
the emulator name a code exactly as the vendor does. State and mode names follow the
vendor's FAQ on robot states and modes.
"""

from __future__ import annotations

import contextlib
import io

#: Controller states as reported by register 13 and the report stream.
STATE_NAMES: dict[int, str] = {
    0: "starting",
    1: "moving",
    2: "ready",
    3: "paused",
    4: "stopped",
    5: "system reset (mode or configuration changed)",
    6: "decelerating to stop",
}

#: Controller modes (register 19).
MODE_NAMES: dict[int, str] = {
    0: "position",
    1: "servo (servo_j streaming)",
    2: "joint teaching (manual)",
    4: "joint velocity",
    5: "Cartesian velocity",
    6: "joint online planning",
    7: "Cartesian online planning",
    11: "trajectory playback",
}


def _sdk_title(kind: str, code: int) -> str:
    """Title of a code from the SDK's tables (``kind`` is ``"error"`` or ``"warn"``)."""
    # Importing the SDK prints its version on stdout; keep callers' output clean.
    with contextlib.redirect_stdout(io.StringIO()):
        from xarm.core.config.x_code import ControllerError, ControllerWarn
    entry = ControllerError(code) if kind == "error" else ControllerWarn(code)
    return str(entry.title["en"])


def error_meaning(code: int) -> str:
    """One-line meaning of controller error code ``code`` (``"normal"`` for 0)."""
    if code == 0:
        return "normal"
    return _sdk_title("error", int(code))


def warn_meaning(code: int) -> str:
    """One-line meaning of controller warning code ``code`` (``"normal"`` for 0)."""
    if code == 0:
        return "normal"
    return _sdk_title("warn", int(code))


def state_name(state: int) -> str:
    """Name of a controller state number."""
    return STATE_NAMES.get(int(state), f"unknown state {state}")


def mode_name(mode: int) -> str:
    """Name of a controller mode number."""
    return MODE_NAMES.get(int(mode), f"unknown mode {mode}")


def describe_error(code: int) -> str:
    """``"C23 (Joints Angle Exceed Limit)"``-style label of an error code."""
    return f"C{int(code)} ({error_meaning(code)})"


def describe_warn(code: int) -> str:
    """``"W12 (User instruction parameter error)"``-style label of a warning code."""
    return f"W{int(code)} ({warn_meaning(code)})"
