"""A stand-in for a notebook kernel, run as its own process by test_reliability.py and test_stress.py.

    python tests/harness/lab_owner.py '{"end": "interrupt", "rounds": 3, "seed": 1}'

Each round starts a LabServer and runs short loads against it until something ends the
round, as a cell ends in a kernel:
- "exception": a timer signal raises an exception at a random moment (a cell that fails);
- "interrupt": a timer sends this process SIGINT at a random moment (Ctrl-C, a kernel interrupt);
- "kill": nothing; the test kills this process with SIGKILL at a moment of its choosing;
- "complete": one run that ends normally, and a figure saved (two notebooks at once).
It prints one JSON line per event, and after each ended round waits for a line on stdin, so
that the test can look for what the round left behind while its owner still lives.

Every process it starts inherits the TAG environment variable, which is how the tests find
them all, orphans included, without touching anybody else's processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import psutil

TAG = "LAB_TEST_TAG"


class Injected(Exception):
    """The exception a failing cell would raise, at a moment nobody chose."""


def lab_processes(tag: str, exclude: set[int] | frozenset[int] = frozenset()) -> list[psutil.Process]:
    """Every running process that inherited `tag` (zombies hold no port and no CPU: left out)."""
    found = []
    for p in psutil.process_iter():
        if p.pid in exclude:
            continue
        try:
            if p.status() != psutil.STATUS_ZOMBIE and p.environ().get(TAG) == tag:
                found.append(p)
        except psutil.Error:
            continue
    return found


def describe(ps: list[psutil.Process]) -> list[str]:
    out = []
    for p in ps:
        try:
            out.append(f"{p.pid}: {' '.join(p.cmdline())[:140]}")
        except psutil.Error:
            continue
    return out


def guards(owner: int) -> set[int]:
    """The owner's guard process (labserver.harness.processes.guard), which lives as long as the owner does."""
    try:
        return {
            p.pid
            for p in psutil.Process(owner).children()
            if "labserver.harness.processes.guard" in " ".join(p.cmdline())
        }
    except psutil.Error:
        return set()


def port_free(port: int) -> bool:
    from labserver.harness.processes import procs

    return not procs.port_in_use(port)


def wait_for(condition, timeout_s: float) -> bool:
    """Poll `condition` until it holds; False if it still does not after `timeout_s` (a hang guard, not a measure)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


class Owner:
    """The test's handle on one owner process: its events, its processes, its end."""

    def __init__(self, options: dict, env: dict[str, str] | None = None):
        self.tag = uuid.uuid4().hex
        self.stderr = tempfile.NamedTemporaryFile(prefix="lab-owner-", suffix=".log", delete=False)  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, __file__, json.dumps(options)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
            env={**os.environ, TAG: self.tag, "LAB_PROGRESS": "0", **(env or {})},
        )  # fmt: skip
        self.events: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.events.put(json.loads(line))
        self.events.put(None)

    def next(self, timeout_s: float = 90.0) -> dict:
        """The next event; fails with the owner's stderr if none comes in time (a hang) or the owner died."""
        try:
            event = self.events.get(timeout=timeout_s)
        except queue.Empty:
            event = None
        if event is None:
            raise AssertionError(f"owner gave no event within {timeout_s:.0f} s\n{self.log()}")
        return event

    def log(self) -> str:
        return Path(self.stderr.name).read_text(errors="replace")[-3000:]

    def left(self) -> list[psutil.Process]:
        """What the owner started and still runs, besides the owner and its guard."""
        return lab_processes(self.tag, exclude={self.proc.pid, *guards(self.proc.pid)})

    def go_on(self) -> None:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def close(self) -> list[str]:
        """End the owner (if still running) and anything it left; return what had to be killed."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        wait_for(lambda: not lab_processes(self.tag), 10)  # the guard needs a moment once its owner is gone
        leftovers = lab_processes(self.tag)
        for p in leftovers:
            with contextlib.suppress(psutil.Error):
                p.kill()
        self.proc.stdout.close()
        self.stderr.close()
        Path(self.stderr.name).unlink(missing_ok=True)
        return describe(leftovers)


def _emit(**event) -> None:
    print(json.dumps(event), flush=True)


class Interrupter:
    """Ends the round at `delay_s`: SIGALRM, whose handler raises Injected, or SIGINT (KeyboardInterrupt).

    The signal lands wherever the main thread is. Should a library swallow it (a broad
    `except Exception`), the round would go on forever: it fires again after BACKSTOP_S,
    longer than any clean-up takes, and counts how many times it had to.
    """

    BACKSTOP_S = 25.0

    def __init__(self, end: str, delay_s: float):
        self.sig = {"exception": signal.SIGALRM, "interrupt": signal.SIGINT}.get(end)
        self.fired = 0
        self.done = threading.Event()
        if self.sig is not None:
            threading.Thread(target=self._run, args=(delay_s,), daemon=True).start()

    def _run(self, delay_s: float) -> None:
        wait_s = delay_s
        while not self.done.wait(wait_s):
            self.fired += 1
            os.kill(os.getpid(), self.sig)
            wait_s = self.BACKSTOP_S

    def stop(self) -> None:
        self.done.set()


_interrupters: dict[int, Interrupter] = {}


def _fail(signum, frame):
    raise Injected("injected by a timer")


def _round(options: dict, n: int, rng: random.Random) -> None:
    from labserver.harness.load.run import run_load
    from labserver.harness.processes import procs
    from labserver.harness.servers.launcher import LabServer

    workers = options.get("workers", [1, 2])[n % len(options.get("workers", [1, 2]))]
    processes = options.get("processes", [1, 2])[(n // 2) % len(options.get("processes", [1, 2]))]
    port = procs.free_port()
    delay_s = rng.uniform(*options.get("delay_s", (0.05, 4.0)))
    _emit(event="round", round=n, port=port, workers=workers, processes=processes, delay_s=delay_s)
    interrupter = _interrupters[n] = Interrupter(options["end"], delay_s)
    try:
        with LabServer(workers=workers, procs=1, port=port) as server:
            while True:  # round after round of short loads: whatever the moment, a run is going on
                run_load(server, "sequential", users=2, io_ms=50, duration_s=options.get("duration_s", 2),
                         processes=processes, lesson=options.get("lesson", "owner"))  # fmt: skip
    finally:
        interrupter.stop()


def _complete(options: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from labserver.charts import plots
    from labserver.harness.load.run import run_load
    from labserver.harness.servers.launcher import LabServer

    with LabServer(procs=0) as server:
        _emit(event="round", round=0, port=server.port)
        result = run_load(server, "sequential", users=2, io_ms=50, duration_s=options.get("duration_s", 2),
                          lesson=options.get("lesson", "owner"))  # fmt: skip
    fig = plots.throughput(result.frame, title="one run")
    for _ in range(options.get("saves", 5)):
        plots.save(fig, "owner", "throughput")
    _emit(event="done", port=server.port, run_id=result.row["run_id"], status=result.row["status"])


def main(options: dict) -> int:
    import labserver.harness.load.run  # noqa: F401 - pay for the imports before the first round's clock starts

    rng = random.Random(options.get("seed"))
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a kernel does, whatever it inherited
    signal.signal(signal.SIGALRM, _fail)
    _emit(event="ready", pid=os.getpid())
    if options["end"] == "complete":
        _complete(options)
        return 0
    for n in range(options.get("rounds", 1)):
        started = time.monotonic()
        try:
            _round(options, n, rng)
        except (Injected, KeyboardInterrupt) as e:
            fired = _interrupters[n].fired if n in _interrupters else 0
            _emit(
                event="ended", round=n, by=type(e).__name__, after_s=round(time.monotonic() - started, 2), fired=fired
            )
        sys.stdin.readline()  # the test looks around, then lets the next round start
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))


@contextlib.contextmanager
def lab_kernel():
    """A real Jupyter kernel whose processes carry a tag of their own: yields (tag, manager, client).

    Ready to execute, progress off; shut down at the end, and anything it started that is still
    running killed, whatever the test did to it.
    """
    from jupyter_client.manager import KernelManager

    tag = "kernel-" + os.urandom(6).hex()
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env={**os.environ, "LAB_TEST_TAG": tag, "LAB_PROGRESS": "0"})
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        yield tag, km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        for p in lab_processes(tag):
            p.kill()
