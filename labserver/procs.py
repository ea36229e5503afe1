"""Child processes that never outlive their owner: own process group, parent-death signal, tree teardown.

Kernel restarts and hard kills do not reach a kernel's children (jupyter_client#104,
papermill#125), so each child is started in its own session, asks Linux to send it
SIGTERM when its parent dies, and is stopped with its whole process tree.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
from collections import deque
from pathlib import Path

import psutil

_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Ask Linux to send `sig` to this process when its parent exits (no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, sig)


def _child_setup(parent_pid: int) -> None:
    die_with_parent()
    # The parent may have died before prctl ran; then no signal will ever come.
    if os.getppid() != parent_pid:
        os._exit(1)


def spawn(cmd: list[str], log_path: Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.Popen:
    """Start `cmd` in its own session, output to `log_path`, dying with this process."""
    parent = os.getpid()
    log = open(log_path, "ab")  # noqa: SIM115 - the child owns it; closed below once handed over
    try:
        return subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            start_new_session=True,
            preexec_fn=lambda: _child_setup(parent),  # noqa: PLW1509 - runs before exec, no threads touched
        )
    finally:
        log.close()


def tree(pid: int) -> list[psutil.Process]:
    """The process and every descendant still alive."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def stop_tree(proc: subprocess.Popen, grace_s: float = 5.0) -> None:
    """SIGTERM the process group and every descendant, then SIGKILL whatever is left after `grace_s`."""
    members = tree(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    for p in members:  # descendants that left the group (setsid) still get the signal
        try:
            p.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(members, timeout=grace_s)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=2)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        pass


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def tail(path: Path, lines: int = 30) -> str:
    """The last `lines` lines of a log file, or a note that there is none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(deque(f, maxlen=lines))
    except FileNotFoundError:
        return f"(no log at {path})"
