"""Child processes that never outlive their owner: own session, parent-death signal, a guard, tree teardown.

Kernel restarts and hard kills do not reach a kernel's children (jupyter_client#104,
papermill#125). Three layers make sure they go anyway:

1. Each child starts in its own session, so its whole tree is one process group that
   `stop_tree` ends in one go (and a Ctrl-C meant for the kernel never reaches it half-way).
2. Each child asks Linux for SIGTERM when its parent dies (PR_SET_PDEATHSIG). Linux sends it
   when the *thread* that forked the child ends, not the process: a child forked from a
   short-lived thread (an ipykernel subshell, a thread a learner starts) would die with that
   thread. So every child is forked from one long-lived spawner thread.
3. That signal reaches the direct child only, and forks do not inherit it (uvicorn's
   `--workers`, Locust's `--processes`). A guard process (labserver.harness.processes.guard) watches the owner
   and, however the owner dies, SIGKILL included, stops every process group it started.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from queue import SimpleQueue

import psutil

# Runs in the child between fork and the real program. A preexec_fn would run Python in the
# forked copy of a threaded parent (a Jupyter kernel), where a lock held by another thread at
# fork time deadlocks it; a fresh interpreter that execs the program has no such locks.
_ARM = """\
import os, sys
if sys.platform.startswith("linux"):
    import ctypes
    ctypes.CDLL(None).prctl(1, 15)  # PR_SET_PDEATHSIG, SIGTERM
if os.getppid() != int(sys.argv[1]):
    os._exit(1)  # the owner died before prctl ran: no signal would ever come
os.execvp(sys.argv[2], sys.argv[2:])
"""


class _Spawner:
    """One long-lived thread that forks every child, and the guard process of this owner."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.jobs: SimpleQueue = SimpleQueue()
        self.lock = threading.Lock()
        self.guard: subprocess.Popen | None = None
        self.guard_fd: int | None = None
        self.groups: set[int] = set()  # process groups started and not yet stopped
        threading.Thread(target=self._run, name="labserver-spawner", daemon=True).start()

    def _run(self) -> None:
        while True:
            fn, future = self.jobs.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as e:
                    future.set_exception(e)

    def submit(self, fn: Callable) -> Future:
        future: Future = Future()
        self.jobs.put((fn, future))
        return future

    def watch(self, pgid: int) -> None:
        """Tell the guard about a new process group (restarting the guard if it is gone)."""
        with self.lock:
            self.groups.add(pgid)
            if self.guard is None or self.guard.poll() is not None or not self._tell(f"+{pgid}"):
                self._start_guard()

    def forget(self, pgid: int) -> None:
        with self.lock:
            if pgid in self.groups:
                self.groups.discard(pgid)
                self._tell(f"-{pgid}")

    def _tell(self, line: str) -> bool:
        if self.guard_fd is None:
            return False
        try:
            os.write(self.guard_fd, f"{line}\n".encode())  # one short write on a pipe: atomic
            return True
        except OSError:
            return False

    def _start_guard(self) -> None:
        if self.guard_fd is not None:
            os.close(self.guard_fd)
        read_fd, self.guard_fd = os.pipe()  # both ends non-inheritable: no other child holds the pipe open
        try:
            # Its own session and no parent-death signal: the guard must outlive this process.
            self.guard = subprocess.Popen(
                [sys.executable, "-m", "labserver.harness.processes.guard", str(self.pid), str(read_fd)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(read_fd,),
                start_new_session=True,
                cwd=Path(__file__).resolve().parents[3],  # the repository: `-m labserver...` finds the package there
            )
        finally:
            os.close(read_fd)
        for pgid in self.groups:
            self._tell(f"+{pgid}")


_spawner: _Spawner | None = None
_spawner_lock = threading.Lock()


def _get_spawner() -> _Spawner:
    global _spawner
    with _spawner_lock:
        if _spawner is None or _spawner.pid != os.getpid():  # none yet, or we are a fork: threads do not survive fork
            _spawner = _Spawner()
        return _spawner


def spawn(
    cmd: list[str],
    log_path: Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    on_start: Callable[[subprocess.Popen], None] | None = None,
) -> subprocess.Popen:
    """Start `cmd` in its own session, output to `log_path`, dying with this process.

    `on_start` receives the new process in the spawner thread, before `spawn` returns: a
    Ctrl-C that lands in between cannot leave the caller without a handle on its child.
    """
    if shutil.which(cmd[0]) is None:
        raise FileNotFoundError(f"cannot start {cmd[0]!r}: no such program")
    spawner = _get_spawner()

    def start() -> subprocess.Popen:
        log = open(log_path, "ab")  # noqa: SIM115 - the child owns it; closed below once handed over
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _ARM, str(spawner.pid), *cmd],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                start_new_session=True,
            )
        finally:
            log.close()
        try:
            spawner.watch(proc.pid)
            if on_start is not None:
                on_start(proc)
        except BaseException:
            stop_tree(proc, grace_s=1)  # nobody would hold it
            raise
        return proc

    future = spawner.submit(start)
    try:
        return future.result()
    except BaseException:
        # Interrupted while the child was starting: stop it as soon as it exists.
        def stop_once_started(f: Future) -> None:
            if f.exception() is None:
                stop_tree(f.result(), grace_s=1)

        future.add_done_callback(stop_once_started)
        raise


class Owned:
    """What one kind of owner (servers, clusters) has started in this process and not stopped yet.

    `running` holds every started object (each has a `stop()` that takes it out again), `named`
    the ones notebook cells find again by name. `stop_all` runs at interpreter exit too, so that a
    script or kernel that ends normally takes its servers with it.
    """

    def __init__(self) -> None:
        self.running: set = set()
        self.named: dict = {}
        atexit.register(self.stop_all)

    def stop_all(self) -> None:
        for owned in list(self.running):  # a copy: each stop() removes itself from the set
            owned.stop()
        self.named.clear()


def tree(pid: int) -> list[psutil.Process]:
    """The process and every descendant still alive."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def group(pgid: int) -> list[psutil.Process]:
    """Every running process of process group `pgid`, orphans included (zombies hold nothing: left out)."""
    found = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except (OSError, psutil.Error):
            continue
    return found


def _running(members: list[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for p in members:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.Error:
            continue
    return alive


def _signal_all(pgid: int, members: list[psutil.Process], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for p in _running(members):  # descendants that left the group (setsid) get it too
        with contextlib.suppress(psutil.Error):
            p.send_signal(sig)


def wait_gone(pgid: int, members: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Wait until nothing of the group or of `members` runs; return what still does after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = {p.pid: p for p in [*_running(members), *group(pgid)]}
        if not left or time.monotonic() >= deadline:
            return list(left.values())
        time.sleep(0.05)


def stop_tree(proc: subprocess.Popen, grace_s: float = 5.0) -> None:
    """SIGTERM the process group and every descendant, then SIGKILL whatever is left after `grace_s`.

    Returns once nothing of the tree runs (its ports are free then), within a few seconds.
    """
    pgid = proc.pid
    members = tree(proc.pid)
    try:
        _signal_all(pgid, members, signal.SIGTERM)
        members += wait_gone(pgid, members, grace_s)
    finally:
        # Also when a second Ctrl-C cut the grace period short: nothing of the tree survives.
        _signal_all(pgid, members, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=2)
        if not wait_gone(pgid, members, 3) and _spawner is not None and _spawner.pid == os.getpid():
            _spawner.forget(pgid)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could not bind `port` on `host` now: someone listens, or holds it bound."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        if s.connect_ex((host, port)) == 0:
            return True
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a TIME_WAIT port is free
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def tail(path: Path, lines: int = 30) -> str:
    """The last `lines` lines of a log file, or a note that there is none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(deque(f, maxlen=lines))
    except FileNotFoundError:
        return f"(no log at {path})"
