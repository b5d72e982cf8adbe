"""The xArm controller's TCP protocol: command frames, report packets, version strings.

Command port (default 502): requests are ``[transaction u16 BE][protocol u16 BE]
[length u16 BE][register u8][params]`` with ``length = 1 + len(params)``; replies echo
transaction, protocol and register and carry ``[status u8][data]`` with
``length = 2 + len(data)``. Floats and int32 payloads are little-endian; header fields
are big-endian. Angles are rad, lengths mm, speeds rad/s on the wire.

Report ports 30001 ("normal", 145 B), 30002 ("rich", here 284 B) and 30003 ("real",
87 B): each packet starts with its own total length (u32 BE); byte 4 holds
``mode << 4 | state``.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

HEADER = struct.Struct(">HHH")
HEADER_SIZE = HEADER.size  # 6 bytes, then the register byte

#: Protocol ids: 2 = private protocol (version handshake), 3 = private with heartbeat
#: (everything after the handshake on firmware >= 1.8.6), 1 = the SDK's optional heartbeat.
PROTOCOL_HEARTBEAT = 1
PROTOCOL_PRIVATE = 2
PROTOCOL_PRIVATE_HEARTBEAT = 3

#: Status-byte bits of a reply.
STATUS_INVALID = 0x08
STATUS_NOT_READY = 0x10
STATUS_WARNING = 0x20
STATUS_ERROR = 0x40

#: Report ports; the SDK recognises them by these literal numbers.
REPORT_PORT_NORMAL = 30001
REPORT_PORT_RICH = 30002
REPORT_PORT_REAL = 30003
REPORT_SIZES: dict[int, int] = {REPORT_PORT_NORMAL: 145, REPORT_PORT_RICH: 284, REPORT_PORT_REAL: 87}
#: Report rates (Hz): 5 Hz for normal and rich, 100 Hz for real.
REPORT_RATES: dict[int, float] = {REPORT_PORT_NORMAL: 5.0, REPORT_PORT_RICH: 5.0, REPORT_PORT_REAL: 100.0}


class Register:
    """Command-port register (function code) numbers used here."""

    GET_VERSION = 1
    GET_ROBOT_SN = 2
    MOTION_ENABLE = 11
    SET_STATE = 12
    GET_STATE = 13
    GET_CMDNUM = 14
    GET_ERROR = 15
    CLEAN_ERROR = 16
    CLEAN_WARN = 17
    SET_MODE = 19
    MOVE_SERVOJ = 29
    GET_TCP_POSE = 41
    GET_JOINT_STATES = 42
    GET_JOINT_TAU = 55
    VC_SET_JOINTV = 81
    SET_FEEDBACK_TYPE = 254


@dataclass(frozen=True)
class Frame:
    """One request frame on the command port."""

    transaction: int
    protocol: int
    register: int
    params: bytes


def encode_request(transaction: int, protocol: int, register: int, params: bytes = b"") -> bytes:
    """Bytes of a request frame."""
    return HEADER.pack(transaction & 0xFFFF, protocol, 1 + len(params)) + bytes([register]) + params


def encode_reply(request: Frame, status: int, data: bytes = b"") -> bytes:
    """Bytes of the reply to ``request`` with status byte ``status`` and ``data``."""
    return (HEADER.pack(request.transaction, request.protocol, 2 + len(data))
            + bytes([request.register, status & 0xFF]) + data)


def split_frames(buffer: bytearray) -> list[Frame]:
    """Remove every complete request frame from the front of ``buffer`` and return them."""
    frames: list[Frame] = []
    while len(buffer) >= HEADER_SIZE + 1:
        transaction, protocol, length = HEADER.unpack_from(buffer, 0)
        end = HEADER_SIZE + length
        if length < 1 or len(buffer) < end:
            if length < 1:  # malformed: drop the header so the stream can resynchronise
                del buffer[:HEADER_SIZE]
                continue
            break
        frames.append(Frame(transaction, protocol, buffer[HEADER_SIZE], bytes(buffer[HEADER_SIZE + 1:end])))
        del buffer[:end]
    return frames


#: Registers that only read (they never change what the arm does).
READ_REGISTERS = frozenset({Register.GET_VERSION, Register.GET_ROBOT_SN, Register.GET_STATE, Register.GET_CMDNUM,
                            Register.GET_ERROR, Register.GET_TCP_POSE, Register.GET_JOINT_STATES,
                            Register.GET_JOINT_TAU})
#: ``set_state`` arguments that stop the arm: 3 pause, 4 stop, 6 decelerate to stop.
STOP_STATES = frozenset({3, 4, 6})


def request_frames(data: bytes) -> list[Frame]:
    """The complete request frames in ``data`` (bytes about to be written to the command port)."""
    return split_frames(bytearray(data))


def cannot_move(frame: Frame) -> bool:
    """Whether a request can only stop, hold or read the arm, never set it in motion.

    True for reads, ``set_state`` 3/4/6, ``set_mode(0)``, disabling the motors, an all-zero
    joint velocity and heartbeats; False for everything else (any motion command, ``set_state(0)``,
    other modes, clearing errors, registers not known here).
    """
    params = frame.params
    if frame.protocol == PROTOCOL_HEARTBEAT or frame.register in READ_REGISTERS:
        return True
    if frame.register == Register.SET_STATE:
        return params[:1] != b"" and params[0] in STOP_STATES
    if frame.register == Register.SET_MODE:
        return params[:1] == b"\x00"
    if frame.register == Register.MOTION_ENABLE:
        return len(params) >= 2 and params[1] == 0
    if frame.register == Register.VC_SET_JOINTV:
        return len(params) >= 24 and not np.any(unpack_floats(params, 6))
    return False


def pack_floats(values: FloatArray | list[float] | tuple[float, ...]) -> bytes:
    """Little-endian FP32 encoding of a sequence of floats."""
    values = [float(v) for v in values]
    return struct.pack(f"<{len(values)}f", *values)


def unpack_floats(data: bytes, count: int, offset: int = 0) -> FloatArray:
    """``count`` little-endian FP32 values from ``data`` starting at ``offset``."""
    return np.array(struct.unpack_from(f"<{count}f", data, offset), dtype=float)


def version_payload(version: str) -> bytes:
    """The 40-byte NUL-padded ASCII reply data of GET_VERSION."""
    raw = version.encode("ascii")[:40]
    return raw + b"\0" * (40 - len(raw))


_VERSION_PATTERN = re.compile(r"^(\d+),(\d+),([^,]*),([^,]*),\s*[vV](\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class FirmwareVersion:
    """A parsed GET_VERSION answer.

    Attributes
    ----------
    axis : int
        Number of joints (6 for the xArm 6).
    device_type : int
        Robot type number (6 for the xArm 6).
    robot_sn, control_box_sn : str
        Serial numbers.
    number : tuple of int
        Firmware (major, minor, revision).
    text : str
        The raw answer.
    """

    axis: int
    device_type: int
    robot_sn: str
    control_box_sn: str
    number: tuple[int, int, int]
    text: str

    @property
    def label(self) -> str:
        """``"v2.6.107"``."""
        return "v" + ".".join(str(n) for n in self.number)


def parse_version(payload: bytes) -> FirmwareVersion | None:
    """Parse GET_VERSION reply data; None if it is not an xArm version string."""
    text = payload.split(b"\0", 1)[0].decode("ascii", errors="replace").strip()
    match = _VERSION_PATTERN.match(text)
    if match is None:
        return None
    axis, device_type, robot_sn, box_sn, major, minor, revision = match.groups()
    return FirmwareVersion(int(axis), int(device_type), robot_sn, box_sn.strip(),
                           (int(major), int(minor), int(revision)), text)


@dataclass(frozen=True)
class ReportSnapshot:
    """What a report packet carries, in SI units except where the wire says otherwise.

    Attributes
    ----------
    state, mode : int
        Controller state and mode numbers.
    joints : ndarray, shape (6,)
        Joint positions (rad).
    velocities : ndarray, shape (6,)
        Joint velocities (rad/s).
    efforts : ndarray, shape (6,)
        Joint torques (N·m).
    tcp_pose : ndarray, shape (6,)
        Flange pose in the base frame: x, y, z (mm), roll, pitch, yaw (rad).
    enabled : bool
        All six motors enabled (brakes released).
    error_code, warn_code : int
        Controller error and warning codes.
    """

    state: int
    mode: int
    joints: FloatArray
    velocities: FloatArray
    efforts: FloatArray
    tcp_pose: FloatArray
    enabled: bool
    error_code: int
    warn_code: int


def _seven(values: FloatArray) -> list[float]:
    out = [float(v) for v in values][:7]
    return out + [0.0] * (7 - len(out))


def encode_report(port: int, snap: ReportSnapshot) -> bytes:
    """One report packet for report port ``port`` (30001, 30002 or 30003)."""
    size = REPORT_SIZES[port]
    packet = bytearray(size)
    struct.pack_into(">I", packet, 0, size)
    packet[4] = ((snap.mode & 0x0F) << 4) | (snap.state & 0x0F)
    struct.pack_into(">H", packet, 5, 0)  # cmdnum: no queued commands
    struct.pack_into("<7f", packet, 7, *_seven(snap.joints))
    struct.pack_into("<6f", packet, 35, *[float(v) for v in snap.tcp_pose])
    struct.pack_into("<7f", packet, 59, *_seven(snap.efforts))
    if port == REPORT_PORT_REAL:
        return bytes(packet)
    bits = 0x3F if snap.enabled else 0x00
    packet[87] = bits  # brakes released
    packet[88] = bits  # motors enabled
    packet[89] = snap.error_code & 0xFF
    packet[90] = snap.warn_code & 0xFF
    # 91..130: TCP offset and payload, all zero; collision and teach sensitivity 0..5.
    packet[131] = 3
    packet[132] = 3
    struct.pack_into("<3f", packet, 133, 0.0, 0.0, -1.0)  # gravity direction
    if port == REPORT_PORT_NORMAL:
        return bytes(packet)
    packet[145:151] = bytes([6, 6, 0xAA, 0x55, 0, 0])  # type, axis, master id, slave id, motor tid/fid
    struct.pack_into("<5f", packet, 181, 10000.0, 1.0, 50000.0, 0.1, 1000.0)  # TCP jerk, acc, speed limits
    struct.pack_into("<5f", packet, 201, 500.0, 0.01, 20.0, 0.0001, float(np.pi))  # joint limits
    struct.pack_into("<2f", packet, 221, 10000.0, 50000.0)  # rotation jerk, max acc
    struct.pack_into("<f", packet, 252, 0.0)  # target TCP speed
    struct.pack_into("<7f", packet, 256, *_seven(snap.velocities))
    return bytes(packet)
