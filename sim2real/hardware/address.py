"""The controller's address: given by the user, as a literal IPv4 address, or nothing at all.

A tool that drives a real arm never connects anywhere it was not told to: there is no default
address (the vendor's factory address would open a TCP connection to whatever answers on the
lab network), and no host name goes to DNS.
"""

from __future__ import annotations

import ipaddress

from sim2real.errors import Sim2RealError


def require_robot_address(host: str | None, what: str = "robot address") -> str:
    """The controller address ``host`` if it is a literal IPv4 address; an error otherwise.

    Parameters
    ----------
    host : str or None
        As the user gave it (``--robot-ip``, the ``robot_ip`` parameter); None or blank when not given.
    what : str
        How the user names it, for the message.

    Returns
    -------
    str
        The address, normalised (e.g. ``"192.168.1.185"``).

    Raises
    ------
    Sim2RealError
        No address, or not a dotted IPv4 address.
    """
    if host is None or not str(host).strip():
        raise Sim2RealError(f"no {what}: give the xArm controller's IPv4 address (sim2real never connects to an "
                            "address it was not given)")
    try:
        return str(ipaddress.IPv4Address(str(host).strip()))
    except ValueError:
        raise Sim2RealError(f"{what} must be a dotted IPv4 address, got {host!r}") from None
