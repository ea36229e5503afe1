"""Each run's share of its server's telemetry: the samples inside its measurement window, beside its records.

While a LabServer runs, each of its workers appends a sample every 100 ms to
`<server.telemetry_dir>/<pid>.jsonl` (labserver/demo/telemetry.py). After a plan, collect.py
calls `save` for each run: the samples of the run's window go to `telemetry.csv` in its folder,
one row per worker and sample, with `second` on the clock of the run's history.csv (seconds
since the run started). `load` reads them back as a DataFrame.

`db_hold_ms` reads, before the run is priced, how long its requests held a pooled database
connection in its window: the change of the workers' running totals over it (lesson 07).
"""

from __future__ import annotations

import json
import math
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pandas as pd

from labserver.demo.telemetry import EVERY_S, FIELDS, FLUSH_S
from labserver.paths import runs_dir

if TYPE_CHECKING:
    from labserver.harness.rows.results import RunResult
    from labserver.harness.servers.server import Server

FILE = "telemetry.csv"
COLUMNS = ["second", "pid", *FIELDS]
# A worker appends about once a second: a run that has just ended may have its last samples still
# in the worker's memory. Wait for them that long, and a little more, at most.
FLUSH_WAIT_S = 1.5 * FLUSH_S
TAIL_BYTES = 4096


def save(
    run_folder: Path, server: Server, start: float, window: tuple[float, float], wait_s: float = FLUSH_WAIT_S
) -> Path | None:
    """Write the samples of `server`'s workers within `window` (epoch s, both ends) to `run_folder/telemetry.csv`.

    `start` is the run's start, the zero of its history.csv. Returns the file, or None when the
    server sampled nothing in the window (telemetry off, a stand-in server, no window). A file it
    cannot read is a warning, never an error: a run is not lost to its telemetry.
    """
    try:
        return _save(Path(run_folder), server, start, window, wait_s)
    except (OSError, ValueError, KeyError, TypeError) as e:
        warnings.warn(f"no telemetry saved in {Path(run_folder).name}: {e}", stacklevel=2)
        return None


def _save(run_folder: Path, server: Server, start: float, window: tuple[float, float], wait_s: float) -> Path | None:
    folder = getattr(server, "telemetry_dir", None)
    first, last = window
    if folder is None or not Path(folder).is_dir() or math.isnan(first) or math.isnan(last):
        return None
    if getattr(server, "alive", False):
        _wait_for(Path(folder), last, wait_s)
    samples = [s for s in read(Path(folder)) if first <= s["t"] <= last]
    if not samples:
        return None
    frame = pd.DataFrame(samples).sort_values(["t", "pid"], ignore_index=True)
    frame["second"] = frame["t"] - start
    path = run_folder / FILE
    frame.reindex(columns=COLUMNS).to_csv(path, index=False)  # a gauge a worker lacks is left empty
    return path


def db_hold_ms(server: Server, window: tuple[float, float], wait_s: float = FLUSH_WAIT_S) -> float:
    """The mean time a request held a pooled database connection per use within `window` (ms); NaN if unknown.

    From the samples of `server`'s workers in the window (see `hold_ms`); NaN for a server without
    the database routes or telemetry, and for a folder it cannot read (a warning, as in `save`).
    """
    folder = getattr(server, "telemetry_dir", None)
    first, last = window
    if folder is None or not Path(folder).is_dir() or math.isnan(first) or math.isnan(last):
        return math.nan
    try:
        if getattr(server, "alive", False):
            _wait_for(Path(folder), last, wait_s)
        return hold_ms([s for s in read(Path(folder)) if first <= s["t"] <= last])
    except (OSError, ValueError, KeyError, TypeError) as e:
        warnings.warn(f"no connection hold measured: {e}", stacklevel=2)
        return math.nan


def hold_ms(samples: list[dict]) -> float:
    """Seconds held over uses, summed over the workers, between each one's first and last sample (ms).

    Each worker's `db_held_s` and `db_uses` are running totals: its share is their last value less
    its first. A use counts when its connection is back, whole, in the sample after it ended.
    NaN when no connection was used (or no worker has the database routes).
    """
    held_s, uses = 0.0, 0
    for pid in {s["pid"] for s in samples}:
        mine = sorted((s for s in samples if s["pid"] == pid and s.get("db_uses") is not None), key=lambda s: s["t"])
        if len(mine) >= 2:
            held_s += mine[-1]["db_held_s"] - mine[0]["db_held_s"]
            uses += mine[-1]["db_uses"] - mine[0]["db_uses"]
    return held_s / uses * 1000 if uses > 0 else math.nan


def read(folder: Path) -> list[dict]:
    """Every sample in `folder`, with its worker's `pid`; a line cut short (a worker killed mid-write) is left out."""
    samples = []
    for path in sorted(folder.glob("*.jsonl")):
        if not path.stem.isdigit():
            continue
        pid = int(path.stem)
        with open(path) as f:
            for line in f:
                try:
                    sample = json.loads(line)
                except ValueError:
                    continue
                if isinstance(sample, dict) and isinstance(sample.get("t"), int | float):
                    samples.append({**sample, "pid": pid})
    return samples


def _last_t(path: Path) -> float:
    """The time of the last whole sample in `path` (−inf when there is none), from the file's tail only."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - TAIL_BYTES))
            lines = f.read().splitlines()
    except OSError:
        return -math.inf
    for line in reversed(lines):
        try:
            return float(json.loads(line)["t"])
        except (ValueError, KeyError, TypeError):
            continue
    return -math.inf


def _wait_for(folder: Path, until: float, wait_s: float) -> None:
    """Until every worker's file holds a sample at or after `until`, `wait_s` at most."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        files = list(folder.glob("*.jsonl"))
        if files and all(_last_t(p) >= until for p in files):
            return
        time.sleep(EVERY_S)


def load(run: Path | str | RunResult) -> pd.DataFrame:
    """A run's telemetry: `run` is its folder, its run id (under data/runs/) or a RunResult; empty if it has none.

    One row per worker and sample: `second` since the run started (as in its history.csv), `t`
    (epoch s), `pid`, and the gauges of labserver/demo/telemetry.py, `loop_lag_ms` included.
    """
    # a RunResult's folder (or any run's that has a `path`), else the folder or run id as given
    folder = Path(cast("Path | str", getattr(run, "path", run)))
    if not folder.is_dir():
        folder = runs_dir() / str(run)
    path = folder / FILE
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    return pd.read_csv(path)
