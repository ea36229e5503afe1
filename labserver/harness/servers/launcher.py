"""The demo server in the background: uvicorn in a subprocess, owned by a context manager.

`LabServer` starts uvicorn (never inside the kernel: `uvicorn.run` cannot run in a running
event loop), waits for /health, and stops the whole process tree on exit, on exception,
on KeyboardInterrupt and at interpreter exit. `serve()` keeps one server per name across
notebook cells, so re-running the cell that starts it replaces the old one.

`LabServer` is a `Server` (harness/servers/server.py), what the harness measures wherever
it runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from labserver.checks import whole
from labserver.demo.cpus import check_cpus
from labserver.demo.settings import THREADS_DEFAULT, Settings
from labserver.harness.processes import procs
from labserver.harness.processes.meters import CpuMeter
from labserver.harness.servers import addresses, interpreters
from labserver.harness.servers.addresses import LOOPBACK
from labserver.harness.servers.server import Server, ServerError
from labserver.paths import ROOT

PORT_ATTEMPTS = 3
# Each worker is a process, and so is each process-pool child of each worker: bounded so that a
# typo (workers=100) cannot fork a laptop into swap.
PROCESSES_MAX = 64
STOP_GRACE_S = 2.0


Kept = TypeVar("Kept", bound="LabServer")  # a LabServer, or a subclass's (yourapp's AppServer), kept as it is


class LabServer(Server):
    """uvicorn serving `labserver.demo.app` in a subprocess on a free loopback port.

    A subclass serves another app the same way (labserver/yourapp): its `app` factory, the path
    that answers its health check, and the environment it adds (`app_env`).

    Parameters
    ----------
    workers, threads, procs : server settings (uvicorn `--workers`, thread-pool size,
        process-pool size per worker).
    host : interface to bind; anything but a loopback address prints a warning.
    port : port to bind; a free one is chosen when None.
    ready_timeout_s : how long to wait for /health before giving up.
    cpus : the CPUs the server may run on (Linux only), e.g. [1]; None: wherever the OS puts it.
    telemetry : each worker samples what it is doing every 100 ms into `telemetry_dir`, a folder of
        this start's (removed at stop); each run keeps its share (harness/rows/telemetry.py). False: none.
    queue_limit : load shedding (lesson 08): a request that would wait behind this many others for a
        thread gets 503 with Retry-After at once; None: every request waits its turn.
    limit_concurrency : uvicorn's own shedding (`--limit-concurrency`, lesson 09): a request that finds
        this many connections open, its own included, or this many requests in flight gets 503 at once;
        None: no limit. A uvicorn option, not the app's: it is not in `settings`.
    neighbours : the pids of processes that serve it (a database's), asked at each run; pinned
        (`cpus`), its runs keep them, and Locust, on the other usable CPUs (harness/servers/isolate.py).
    python : the Python that runs uvicorn (None: the lab's own). Lesson 10's is a free-threaded one,
        `interpreters.free_threaded_server()`: its environment holds the server's dependencies.
    gil : False runs `python`, which must be free-threaded, without its GIL; True runs any Python with it
        (PYTHON_GIL=1 on a free-threaded one: the same build, the GIL on). A server asked to run without
        the GIL that has it on (an extension turned it back on at import) fails to start, naming the module.
    """

    app = "labserver.demo.app:create_app"  # uvicorn's --factory target
    health_path = "/health"  # answers {"pid": ...} once a worker is ready

    def __init__(
        self,
        *,
        workers: int = 1,
        threads: int = THREADS_DEFAULT,
        procs: int | None = None,
        host: str = LOOPBACK,
        port: int | None = None,
        ready_timeout_s: float = 60.0,
        cpus: list[int] | None = None,
        telemetry: bool = True,
        queue_limit: int | None = None,
        neighbours: Callable[[], list[int]] | None = None,
        python: str | Path | None = None,
        gil: bool = True,
        db_pool: int | None = None,
        upstream: str = "",
        limit_concurrency: int | None = None,
    ):
        self.python = interpreters.check_python(python, gil)
        if limit_concurrency is not None:
            whole("limit_concurrency", limit_concurrency, 2)  # 1 would refuse every request: its own connection counts
        self.limit_concurrency = limit_concurrency
        if cpus is not None:
            check_cpus(cpus)  # here too: an empty list would otherwise read as "not pinned"
        given: dict[str, Any] = {} if procs is None else {"procs": procs}  # else the Settings' default
        if cpus is not None:
            given["cpus"] = tuple(cpus)
        if db_pool is not None:  # lesson 11's pooled sessions; lesson 07's pools take theirs from its own server
            given["db_pool"] = db_pool
        if upstream:  # lesson 12: the other service its endpoints call
            given["upstream"] = upstream
        self.settings = Settings(workers=workers, threads=threads, queue_limit=queue_limit, gil=gil, **given)
        self.settings.check()
        _check_processes(self.settings)
        addresses.check_host(host)
        if port is not None and addresses.port_taken(port, host):
            raise ValueError(f"port {port} is already in use on {host}: pass port=None to pick a free one")
        self.host = host
        self.port = port
        self._pick_port = port is None
        self.ready_timeout_s = ready_timeout_s
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self.ready_s: float | None = None
        self.telemetry = telemetry
        self.telemetry_dir: Path | None = None
        self._neighbours = neighbours

    def neighbours(self) -> list[int]:
        return self._neighbours() if self._neighbours is not None else []

    def meter(self) -> CpuMeter:
        assert self.proc is not None, "start the server before metering it"
        return CpuMeter(self.proc.pid)  # the whole tree: the workers and their pool processes

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> LabServer:
        if self.alive:
            return self
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                return self._start_once()
            except ServerError as e:
                # A free port can be taken by another program (a second notebook) between our pick
                # and uvicorn's bind: pick another, unless the port was the caller's choice.
                if not (self._pick_port and attempt < PORT_ATTEMPTS and "address already in use" in str(e).lower()):
                    raise
                self.port = None
                self._remove_log()  # nobody is shown this attempt's log: the next attempt has its own
        raise AssertionError("unreachable")

    def _start_once(self) -> LabServer:
        self.port = self.port or procs.free_port(self.host)
        self.ready_s = None  # set again only once this start has succeeded
        self.log_path = Path(tempfile.mkdtemp(prefix="labserver-")) / "server.log"
        # the workers make it when they start sampling; it is this start's, like the log
        self.telemetry_dir = self.log_path.parent / "telemetry" if self.telemetry else None
        # not in self.settings: the folder is this start's, the settings are the server's
        env = dataclasses.replace(self.settings, telemetry_dir=str(self.telemetry_dir or "")).to_env()
        env.update(self._interpreter_env())
        env.update(self.app_env())
        cmd = [
            str(self.python.path),
            "-m",
            "uvicorn",
            self.app,
            "--factory",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--workers",
            str(self.settings.workers),
            "--log-level",
            "warning",
            "--no-access-log",
            "--timeout-graceful-shutdown",
            "1",  # requests still in flight at a stop were abandoned by their users: do not wait them out
            *(["--limit-concurrency", str(self.limit_concurrency)] if self.limit_concurrency else []),
        ]
        started = time.perf_counter()
        self.proc = None
        _running.add(self)
        try:
            # on_start hands the process over before spawn returns: a Ctrl-C in between cannot orphan it
            procs.spawn(cmd, self.log_path, env=env, on_start=self._adopt)
            self._wait_ready()
            self._check_gil()
        except BaseException:
            self.stop()
            raise
        self.ready_s = time.perf_counter() - started
        return self

    def app_env(self) -> dict[str, str]:
        """What the app's processes need in their environment besides the lab's settings: nothing, for the demo."""
        return {}

    def _interpreter_env(self) -> dict[str, str]:
        """PYTHON_GIL for a free-threaded Python (1: the GIL on; empty: its default, off); the lab on its path."""
        if self.python.path == Path(sys.executable):
            return {}
        # the server's environment holds its dependencies, not the lab: the lab's own source is imported from here
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        return {"PYTHONPATH": path, "PYTHON_GIL": "1" if self.python.free_threaded and self.settings.gil else ""}

    def _check_gil(self) -> None:
        """Raise ServerError where a server asked to run without the GIL has it on."""
        if self.settings.gil or not self.info().get("gil_enabled"):
            return
        culprit = interpreters.gil_culprit(self.log_tail(200))
        raise ServerError(
            f"the server runs on {self.python.path} with the GIL on, though asked to run without it: "
            f"{culprit or 'see the log'}. Its runs would measure the GIL build.\n{self.log_tail()}"
        )

    def _adopt(self, proc: subprocess.Popen) -> None:
        self.proc = proc

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout_s
        seen: set[int] = set()
        first_ok: float | None = None
        while time.monotonic() < deadline:
            assert self.proc is not None  # _start_once adopts it before waiting
            if not self.alive:
                raise ServerError(f"the server exited during start-up (code {self.proc.returncode})\n{self.log_tail()}")
            try:
                pid = self.get(self.health_path, timeout=1)["pid"]
                # Only our own processes count: another notebook's server may have won the port.
                if pid in {p.pid for p in procs.tree(self.proc.pid)}:
                    seen.add(pid)
                    if first_ok is None:
                        first_ok = time.monotonic()
            except (OSError, ValueError, KeyError, TypeError):
                pass
            # With --workers N, wait until N workers have answered (or 3 s after the first did):
            # a measurement started while a worker still imports the app would measure fewer workers.
            if first_ok is not None and (len(seen) >= self.settings.workers or time.monotonic() - first_ok > 3):
                return
            time.sleep(0.05)
        raise ServerError(
            f"the server did not answer {self.health_path} within {self.ready_timeout_s:.0f} s\n{self.log_tail()}"
        )

    def stop(self) -> None:
        # A server that started and is still running at stop has nothing to report: its log folder
        # goes (they piled up in /tmp by the hundred). One that died, or failed to start, keeps it:
        # its error message names the log, and the caller may still read it (log_tail, after stop).
        clean = self.alive and self.ready_s is not None
        if self.proc is not None:
            # uvicorn's own grace (1 s, above) and then its shutdown; past that, a blocked loop is
            # still running the requests its users abandoned (lesson 05's mixed, for seconds), so SIGKILL.
            procs.stop_tree(self.proc, grace_s=STOP_GRACE_S)
        _running.discard(self)
        self._remove_telemetry()  # every run took its share while the server ran; a dead one's log stays
        if clean:
            self._remove_log()

    def _remove_log(self) -> None:
        if self.log_path is not None:
            shutil.rmtree(self.log_path.parent, ignore_errors=True)  # the folder mkdtemp made for this start
            self.log_path = None
            self.telemetry_dir = None  # it was inside

    def _remove_telemetry(self) -> None:
        if self.telemetry_dir is not None:
            shutil.rmtree(self.telemetry_dir, ignore_errors=True)
            self.telemetry_dir = None

    def log_tail(self, lines: int = 30) -> str:
        if self.log_path is None:
            return "(no server log: this server was never started, or stopped cleanly and its log was removed)"
        return f"--- last lines of {self.log_path} ---\n{procs.tail(self.log_path, lines)}"

    def __enter__(self) -> LabServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.alive else "stopped"
        s = self.settings
        python = "" if self.python.path == Path(sys.executable) else f", python={self.python.label}, gil={s.gil}"
        return f"LabServer({self.url}, workers={s.workers}, threads={s.threads}, procs={s.procs}{python}, {state})"


def _check_processes(settings: Settings) -> None:
    count = settings.workers * (1 + settings.procs)
    if count > PROCESSES_MAX:
        raise ValueError(
            f"workers × (1 + procs) = {settings.workers} × (1 + {settings.procs}) = {count} processes, more than "
            f"{PROCESSES_MAX}: lower workers or procs (procs=0 when the lesson does not use the process pool)"
        )


_owned = procs.Owned()
_running: set[LabServer] = _owned.running
_named: dict[str, LabServer] = _owned.named


def serve(name: str = "default", **settings: Any) -> LabServer:
    """Start a server that lives across notebook cells; re-running replaces the one of the same name."""
    return keep(name, LabServer(**settings))


def keep(name: str, server: Kept) -> Kept:
    """`server` started, to live across notebook cells under `name`: the one kept under it before is stopped first,
    and every one is stopped at exit."""
    old = _named.pop(name, None)
    if old is not None:
        old.stop()
    _named[name] = server.start()
    return server


@contextlib.contextmanager
def running(servers: Iterable[LabServer]) -> Iterator[list[LabServer]]:
    """Start `servers` together and stop them all on exit: `with running([LabServer(workers=w) for w in (1, 2)]) as s:`.

    Their start-ups overlap (a 3-worker server alone takes ~1.3 s to answer, most of it workers
    importing the app), and so do their stops. The first error of any start is raised, once
    every server is stopped.
    """
    servers = list(servers)
    try:
        errors = _together("start", servers)
        if errors:
            raise errors[0]
        yield servers
    finally:
        _together("stop", servers)


def _together(method: str, servers: list[LabServer]) -> list[BaseException]:
    """server.<method>() on every server, each in its own thread; the exceptions they raised."""
    errors: list[BaseException] = []

    def call(server: LabServer) -> None:
        try:
            getattr(server, method)()
        except BaseException as e:  # handed to the caller, who raises it
            errors.append(e)

    threads = [threading.Thread(target=call, args=(s,), name=f"labserver-{method}") for s in servers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def stop_all() -> None:
    """Stop every server this process started (also run at interpreter exit)."""
    _owned.stop_all()
