"""The Pythons a lab server can run on: the lab's own, and a free-threaded one (lesson 10).

A free-threaded CPython (3.13t and newer, PEP 703) runs Python threads on several cores at once.
The lab looks for one (`find_free_threaded`), and `make python-ft` (course/python_ft.py) makes
one where none is found. The demo server runs on it from a virtual environment of its own
(`server_python`) holding the server's dependencies only: Locust's gevent and psycopg do not
support free threading, so the load generator and lesson 07 stay on the lab's interpreter.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from labserver import config
from labserver.paths import ROOT

SERVER_REQUIREMENTS = ROOT / "requirements-freethreaded.txt"
# The sources `make python-ft` builds from where no free-threaded Python is found (course/python_ft.py).
BUILD_VERSION = "3.13.5"
NAMES = ("python3.14t", "python3.13t")  # on PATH, newest first

_PROBE = """
import json, sys, sysconfig
gil = getattr(sys, "_is_gil_enabled", lambda: True)()
print(json.dumps({
    "version": sys.version.split()[0],
    "free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
    "gil_enabled": gil,
    "interpreter_pool": sys.version_info >= (3, 14),
    "executable": sys.executable,
}))
"""


class NoFreeThreadedPython(RuntimeError):
    """No free-threaded CPython on this machine: `make python-ft` gets one."""


@dataclass(frozen=True)
class Interpreter:
    """A Python executable and what it said of itself."""

    path: Path
    version: str
    free_threaded: bool  # built with --disable-gil
    gil_enabled: bool  # at start-up, as run here (PYTHON_GIL unset)
    interpreter_pool: bool  # concurrent.futures.InterpreterPoolExecutor (3.14)

    @property
    def label(self) -> str:
        return f"{self.version}{'t' if self.free_threaded else ''}"


def probe(path: Path | str) -> Interpreter:
    """Ask the Python at `path` what it is; ValueError if it does not run."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON_GIL", "PYTHONPATH")}
    try:
        out = subprocess.run(
            [str(path), "-c", _PROBE], capture_output=True, text=True, timeout=30, env=env, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise ValueError(f"{path} does not run as a Python: {e}") from None
    try:
        said = json.loads(out)
        return Interpreter(
            Path(path), said["version"], said["free_threaded"], said["gil_enabled"], said["interpreter_pool"]
        )
    except (ValueError, KeyError, TypeError):
        # a program that runs but is no Python (echo, a script) prints something else: a candidate to skip
        raise ValueError(f"{path} does not run as a Python: it answered {out[:80]!r}") from None


# fib(20) timed the way model.cpu_ms times it here, best of five; labserver itself need not import there
_FIB = """
import time
def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)
best = float("inf")
for _ in range(5):
    started = time.perf_counter()
    fib(20)
    best = min(best, time.perf_counter() - started)
print(best * 1000)
"""


@cache
def fib_20_ms(path: str) -> float:
    """fib(20)'s time on the Python at `path`, in ms: what fib costs on a server that runs another interpreter
    (a free-threaded build computes it slower than the usual one), for a plan's foresight before it starts."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON_GIL", "PYTHONPATH")}
    out = subprocess.run([path, "-c", _FIB], capture_output=True, text=True, timeout=60, env=env, check=True)
    return float(out.stdout)


def lab() -> Interpreter:
    """The lab's own Python, the one this process runs on."""
    return probe(sys.executable)


def cache_dir() -> Path:
    """Where this machine keeps what it builds once: outside the repository, kept across clones."""
    given = config.CACHE_DIR.read()
    if given is not None:
        return given
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "concurrency-lab"


def built_path() -> Path:
    """The executable `make python-ft` builds from source."""
    return cache_dir() / f"cpython-{BUILD_VERSION}t" / "bin" / f"python{BUILD_VERSION.rsplit('.', 1)[0]}t"


def candidates() -> list[Path]:
    """Where a free-threaded Python may be, in the order they are tried."""
    given = config.FREETHREADED_PYTHON.read()
    found = [given] if given is not None else []
    found += [Path(p) for p in map(shutil.which, NAMES) if p]
    uv = shutil.which("uv")
    if uv:
        try:
            out = subprocess.run([uv, "python", "find", "3.14t"], capture_output=True, text=True, timeout=30)
            if out.returncode == 0 and out.stdout.strip():
                found.append(Path(out.stdout.strip()))
        except (OSError, subprocess.SubprocessError):
            pass
    return [*found, built_path()]


def find_free_threaded() -> Interpreter:
    """The first free-threaded Python of `candidates()`; NoFreeThreadedPython, saying what was tried, if none."""
    tried = []
    for path in candidates():
        if not path.exists():
            tried.append(f"{path}: not there")
            continue
        try:
            found = probe(path)
        except ValueError as e:
            tried.append(str(e))
            continue
        if found.free_threaded:
            return found
        tried.append(f"{path}: Python {found.version} with the GIL")
    given = config.FREETHREADED_PYTHON.name
    raise NoFreeThreadedPython(
        "no free-threaded Python on this machine. `make python-ft` gets one (a build from source takes about "
        f"2 minutes on 2 cores), or set {given} to one's path. Tried:\n  " + "\n  ".join(tried)
    )


def server_env_dir(interpreter: Interpreter) -> Path:
    """The virtual environment of the server's dependencies for `interpreter`, one per interpreter and pin set."""
    key = hashlib.sha256(f"{interpreter.path.resolve()}\n{SERVER_REQUIREMENTS.read_text()}".encode()).hexdigest()
    return cache_dir() / f"server-{interpreter.label}-{key[:12]}"


def server_python(interpreter: Interpreter) -> Path | None:
    """The python of `interpreter`'s server environment, if `make python-ft` made it; None otherwise."""
    python = server_env_dir(interpreter) / "bin" / "python"
    return python if (python.parent.parent / ".installed").exists() else None


def free_threaded_server() -> Path:
    """The python to start lesson 10's server with: a free-threaded one, with the server's dependencies."""
    interpreter = find_free_threaded()
    python = server_python(interpreter)
    if python is None:
        raise NoFreeThreadedPython(
            f"Python {interpreter.label} at {interpreter.path} has no environment with the server's "
            "dependencies yet: `make python-ft` makes it"
        )
    return python


_COUNTER = """
import sys, threading
threads, n = int(sys.argv[1]), int(sys.argv[2])
count = 0
def add():
    global count
    for _ in range(n):
        count += 1  # read, add, write back: three steps another thread can come between
workers = [threading.Thread(target=add) for _ in range(threads)]
for t in workers:
    t.start()
for t in workers:
    t.join()
print(threads * n - count)
"""


def lost_updates(python: Path | str, *, gil: bool, threads: int = 4, n: int = 200_000) -> int:
    """How many of `threads` × `n` unguarded `count += 1` a run of `python` lost (lesson 10's exercise)."""
    env = {**os.environ, "PYTHON_GIL": "1" if gil else ""}
    out = subprocess.run(
        [str(python), "-c", _COUNTER, str(threads), str(n)], capture_output=True, text=True, timeout=120, env=env
    )
    if out.returncode != 0:
        raise RuntimeError(f"the counter did not run on {python}: {out.stderr.strip()}")
    return int(out.stdout)


def check_python(python: str | Path | None, gil: bool) -> Interpreter:
    """The interpreter LabServer runs uvicorn with (None: the lab's own), checked before anything starts."""
    if not isinstance(gil, bool):
        raise ValueError(f"gil must be True or False, got {gil!r}")
    if python is None:
        found = Interpreter(Path(sys.executable), "", free_threaded=False, gil_enabled=True, interpreter_pool=False)
    else:
        found = probe(python)  # ValueError: not a Python
    if not gil and not found.free_threaded:
        raise ValueError(
            f"gil=False needs a free-threaded Python, and {found.path} has the GIL built in: pass "
            "python=interpreters.free_threaded_server() (`make python-ft` makes one)"
        )
    return found


def gil_culprit(log: str) -> str | None:
    """The module CPython's warning names where importing it turned the GIL back on."""
    match = re.search(r"GIL\) has been enabled to load module '([^']+)'", log)
    return f"importing {match.group(1)} turned it on (it has not declared it runs without the GIL)" if match else None
