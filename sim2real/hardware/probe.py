"""A bounded first contact with an xArm controller: connect and ask for its firmware version."""

from __future__ import annotations

import socket
import time

from sim2real.errors import Sim2RealError
from sim2real.hardware import protocol as wire
from sim2real.hardware.driver_types import N_JOINTS


def probe_controller(ip: str, port: int, connect_timeout: float, handshake_timeout: float) -> wire.FirmwareVersion:
    """Connect to ``ip:port`` and ask for the firmware version, with hard time limits.

    The SDK retries an unanswered version query for minutes; this probe bounds that.

    Raises
    ------
    Sim2RealError
        Refused or unreachable address, no answer, or an answer that is not an xArm version.
    """
    where = f"{ip}:{port}"
    try:
        sock = socket.create_connection((ip, port), timeout=connect_timeout)
    except ConnectionRefusedError:
        raise Sim2RealError(f"cannot connect to the xArm controller at {where}: connection refused "
                            f"(is it switched on, and is the address right?)") from None
    except TimeoutError:
        raise Sim2RealError(f"cannot connect to the xArm controller at {where}: "
                            f"no TCP connection within {connect_timeout:g} s") from None
    except OSError as err:
        raise Sim2RealError(f"cannot connect to the xArm controller at {where}: {err.strerror or err}") from None
    with sock:
        deadline = time.monotonic() + handshake_timeout
        buffer = bytearray()
        try:
            sock.sendall(wire.encode_request(1, wire.PROTOCOL_PRIVATE, wire.Register.GET_VERSION))
            while True:
                if len(buffer) >= wire.HEADER_SIZE:
                    length = wire.HEADER.unpack_from(buffer, 0)[2]
                    if len(buffer) >= wire.HEADER_SIZE + length:
                        break
                remaining = deadline - time.monotonic()
                if remaining <= 0.0:
                    raise TimeoutError
                sock.settimeout(remaining)
                chunk = sock.recv(4096)
                if not chunk:
                    raise Sim2RealError(f"the xArm controller at {where} closed the connection "
                                        f"instead of answering the version query")
                buffer.extend(chunk)
        except TimeoutError:
            raise Sim2RealError(f"the xArm controller at {where} accepted the connection but did not answer "
                                f"the version query within {handshake_timeout:g} s") from None
        except OSError as err:
            raise Sim2RealError(f"lost the connection to {where} during the version query: {err}") from None
    _, protocol, length = wire.HEADER.unpack_from(buffer, 0)
    register = buffer[wire.HEADER_SIZE]
    data = bytes(buffer[wire.HEADER_SIZE + 2:wire.HEADER_SIZE + length])
    if protocol != wire.PROTOCOL_PRIVATE or register != wire.Register.GET_VERSION:
        raise Sim2RealError(f"{where} does not speak the xArm protocol (reply protocol {protocol}, "
                            f"register {register} to a version query)")
    version = wire.parse_version(data)
    if version is None:
        text = data.split(b"\0", 1)[0].decode("ascii", errors="replace")
        raise Sim2RealError(f"unexpected firmware answer from {where}: {text!r} is not an xArm version string")
    if version.axis != N_JOINTS:
        raise Sim2RealError(f"{where} is a {version.axis}-axis arm ({version.text!r}), expected an xArm 6")
    return version
