"""Every LAB_* environment variable the lab reads: its name, default and meaning, once.

The environment is the one channel that reaches the lab's other processes: `make figures` tells
each lesson's kernel where figures and verdicts go and which batch it belongs to, the launcher
hands the server's settings to every uvicorn worker (demo/settings.py), and the tests point all
they start at a folder of their own. So a setting is read when it is asked for, never at import:
the batch and the tests change them from one run to the next. Unset or empty, it reads as its
default.

This module sits beside checks.py, outside the layers, so that every layer down to demo/ may read
it; it imports nothing of the lab's (a contract in pyproject.toml). tests/test_config.py fails if
another module reads a LAB_* variable itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One LAB_* variable: `read()` gives its value now; `text(value)` is what to set it to."""

    name: str
    default: T  # what an unset or empty variable reads as
    meaning: str
    parse: Callable[[str], T]
    form: str  # what a value looks like, for the error when one does not parse
    show: Callable[[T], str] = str

    def read(self) -> T:
        text = os.environ.get(self.name, "")
        if not text:
            return self.default
        try:
            return self.parse(text)
        except ValueError:
            raise ValueError(f"{self.name} must be {self.form}, got {text!r}") from None

    def text(self, value: T) -> str:
        """`value` as the variable holds it; None as empty, which reads back as the default."""
        return "" if value is None else self.show(value)


def _on(text: str) -> bool:
    return text != "0"


def _seconds(text: str) -> float:
    seconds = float(text)
    if not seconds > 0:
        raise ValueError(text)
    return seconds


def _cpus(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part.strip())


def _hosts(text: str) -> tuple[str, ...]:
    return tuple(part for part in text.split(",") if part)


def _listed(values: tuple) -> str:
    return ",".join(map(str, values))


# Where results go and how a run shows itself: set by `make figures`, `make bench` and the tests.
DATA_DIR: Setting[Path | None] = Setting(
    name="LAB_DATA_DIR",
    default=None,
    meaning="folder for runs, executed lessons, figures and the database (unset: the repository's data/)",
    parse=Path,
    form="a folder",
)
FIGURES_DIR: Setting[Path | None] = Setting(
    name="LAB_FIGURES_DIR",
    default=None,
    meaning="folder `plots.save` writes each chart to, as PNG (unset: none is written; `make figures` sets it)",
    parse=Path,
    form="a folder",
)
CLAIMS_FILE: Setting[Path | None] = Setting(
    name="LAB_CLAIMS_FILE",
    default=None,
    meaning="file each claim's verdict is appended to as a JSON line (the batch sets one per lesson)",
    parse=Path,
    form="a file",
)
BATCH_ID: Setting[str | None] = Setting(
    name="LAB_BATCH_ID",
    default=None,
    meaning="the batch a run belongs to, kept with the run; lesson 99 and `make bench` judge one batch's runs",
    parse=str,
    form="an id",
)
PROGRESS: Setting[bool] = Setting(
    name="LAB_PROGRESS",
    default=True,
    meaning="0 turns progress bars and the live view off (the tests do)",
    parse=_on,
    form="0 or 1",
    show=lambda on: "1" if on else "0",
)
LIVE_EVERY_S: Setting[float] = Setting(
    name="LAB_LIVE_EVERY_S",
    default=1.0,
    meaning="seconds between the live view's frames; inf draws a plan's first and last only",
    parse=_seconds,
    form="a number of seconds above 0 (or inf)",
)
PG_BIN: Setting[Path | None] = Setting(
    name="LAB_PG_BIN",
    default=None,
    meaning="folder holding PostgreSQL's initdb and postgres (unset: pgserver's wheel, else the OS's packages)",
    parse=Path,
    form="a folder",
)
FREETHREADED_PYTHON: Setting[Path | None] = Setting(
    name="LAB_FREETHREADED_PYTHON",
    default=None,
    meaning="a free-threaded CPython (3.13t or newer) for lesson 10's server (unset: looked for on PATH, in the cache)",
    parse=Path,
    form="the path of a python executable",
)
CACHE_DIR: Setting[Path | None] = Setting(
    name="LAB_CACHE_DIR",
    default=None,
    meaning="folder outside the repository for what one machine builds once (unset: $XDG_CACHE_HOME/concurrency-lab)",
    parse=Path,
    form="a folder",
)
WORKER_TARGETS: Setting[tuple[str, ...]] = Setting(
    name="LAB_WORKER_TARGETS",
    default=(),
    meaning="hosts a Locust worker may send load to (set by `python -m labserver worker`, read by locustfiles/)",
    parse=_hosts,
    form="host names, comma-separated",
    show=_listed,
)

# The server's settings, from the launcher to every uvicorn worker: demo/settings.py's fields
# take these defaults.
WORKERS: Setting[int] = Setting(
    name="LAB_WORKERS",
    default=1,
    meaning="uvicorn worker processes",
    parse=int,
    form="a whole number",
)
THREADS: Setting[int] = Setting(
    name="LAB_THREADS",
    default=40,  # AnyIO's own default thread-pool size
    meaning="thread-pool size per worker",
    parse=int,
    form="a whole number",
)
PROCS: Setting[int | None] = Setting(
    name="LAB_PROCS",
    default=None,
    meaning="process-pool size per worker (unset: one per core the server may use)",
    parse=int,
    form="a whole number",
)
DATABASE_URL: Setting[str] = Setting(
    name="LAB_DATABASE_URL",
    default="",
    meaning="libpq connection string; when set, the app serves lesson 07's database routes",
    parse=str,
    form="a connection string",
)
DB_POOL: Setting[int] = Setting(
    name="LAB_DB_POOL",
    default=20,
    meaning="connections in each of lesson 07's two pools (sync and async), per worker",
    parse=int,
    form="a whole number",
)
CPUS: Setting[tuple[int, ...]] = Setting(
    name="LAB_CPUS",
    default=(),
    meaning="CPUs the server's processes may run on, comma-separated (unset: wherever the OS puts them)",
    parse=_cpus,
    form="CPU numbers, comma-separated",
    show=_listed,
)
TELEMETRY_DIR: Setting[str] = Setting(
    name="LAB_TELEMETRY_DIR",
    default="",
    meaning="folder each worker appends its telemetry to, one file per pid (unset: none is sampled)",
    parse=str,
    form="a folder",
)
QUEUE_LIMIT: Setting[int | None] = Setting(
    name="LAB_QUEUE_LIMIT",
    default=None,
    meaning="requests that may wait for a thread before the next gets 503 (unset: every request waits)",
    parse=int,
    form="a whole number",
)

UPSTREAM: Setting[str] = Setting(
    name="LAB_UPSTREAM",
    default="",
    meaning="the other service lesson 12's endpoints call, as http://host:port (unset: they answer 503)",
    parse=str,
    form="a URL",
)

GIL: Setting[bool] = Setting(
    name="LAB_GIL",
    default=True,
    meaning="1: the server's Python runs with its GIL; 0: a free-threaded one runs without it (lesson 10)",
    parse=_on,
    form="0 or 1",
    show=lambda on: "1" if on else "0",
)

# An app of one's own (`python -m labserver measure`), from the command to every uvicorn worker (yourapp/wrap.py)
YOUR_APP: Setting[str] = Setting(
    name="LAB_APP",
    default="",
    meaning="the app `measure` serves in the lab's layer, as module:attribute",
    parse=str,
    form="module:attribute",
)
YOUR_APP_THREADS: Setting[int | None] = Setting(
    name="LAB_APP_THREADS",
    default=None,
    meaning="the thread limit the lab sets in each worker once that app has started (unset: the app's own)",
    parse=int,
    form="a whole number",
)
YOUR_APP_DIR: Setting[Path | None] = Setting(
    name="LAB_APP_DIR",
    default=None,
    meaning="the folder that app's module is imported from (unset: the workers' current folder)",
    parse=Path,
    form="a folder",
)


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        DATA_DIR,
        FIGURES_DIR,
        CLAIMS_FILE,
        BATCH_ID,
        PROGRESS,
        LIVE_EVERY_S,
        YOUR_APP,
        YOUR_APP_DIR,
        YOUR_APP_THREADS,
        PG_BIN,
        FREETHREADED_PYTHON,
        CACHE_DIR,
        WORKER_TARGETS,
        WORKERS,
        THREADS,
        PROCS,
        DATABASE_URL,
        DB_POOL,
        CPUS,
        TELEMETRY_DIR,
        QUEUE_LIMIT,
        UPSTREAM,
        GIL,
    )
}
