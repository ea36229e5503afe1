"""Where a lab server listens: loopback by default, a clear error for an address this machine lacks.

The lab's servers compute and wait for whoever sends them a request, and nothing authenticates
one: anything but a loopback address is said out loud, at start and in a warning.
"""

from __future__ import annotations

import ipaddress
import socket
import warnings

from labserver.harness.processes import procs

LOOPBACK = "127.0.0.1"


def check_host(host: str) -> None:
    """Refuse an address this machine does not have; warn when the server would be reachable from others."""
    if not isinstance(host, str) or not host:
        raise ValueError(f"host must be an address such as {LOOPBACK!r}, got {host!r}")
    try:
        procs.free_port(host)
    except OSError as e:
        raise ValueError(f"cannot listen on host {host!r} ({e.strerror or e}): leave host at {LOOPBACK!r}") from None
    if not loopback(host):
        warnings.warn(
            f"the lab server will listen on {host}: other machines may reach it and make it compute and wait "
            f"for them. Leave host at {LOOPBACK!r} unless you mean it.",
            stacklevel=3,
        )


def exposure(host: str, port: int) -> str | None:
    """One line saying who may reach a server listening on `host`:`port`; None when only this machine can."""
    if loopback(host):
        return None
    try:
        everywhere = ipaddress.ip_address(host).is_unspecified
    except ValueError:
        everywhere = False  # a name: it stands for one address of this machine
    where = f"every interface of this machine, port {port}" if everywhere else f"{host}:{port}"
    return (
        f"listening on {where}: any machine that can reach it over the network can make this server compute "
        "and wait, and nothing authenticates requests (Ctrl-C stops it)"
    )


def loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def port_taken(port: int, host: str) -> bool:
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"port must be from 1 to 65535, got {port}")
    return procs.port_in_use(port, host)
