"""Results on disk: one folder per run under data/runs/, written atomically, never overwritten.

A run is measured into `data/runs/.partial-<run-id>/` and renamed to `data/runs/<run-id>/`
once its manifest is complete, so a half-written folder is never read as a run.
"""

from __future__ import annotations

import json
import math
import os
import platform
import secrets
import subprocess
import time
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import IO, Literal, TypeVar

import pandas as pd

from labserver.demo import cpus
from labserver.harness.rows import columns as declared
from labserver.labels import pattern_label
from labserver.paths import ROOT, runs_dir
from labserver.theory import model

PACKAGES = ("fastapi", "uvicorn", "starlette", "anyio", "locust", "pandas", "seaborn", "papermill")
BESIDE = "beside.json"  # what was measured beside a run while it ran (attach), next to its manifest


def new_run_id(pattern: str, users: int) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{pattern}-u{users}-{secrets.token_hex(3)}"


def partial_dir(run_id: str) -> Path:
    """A new, hidden folder to measure run `run_id` into; FileExistsError if the id is taken."""
    if (runs_dir() / run_id).exists():
        raise FileExistsError(f"run {run_id} already exists in {runs_dir()}")
    path = runs_dir() / f".partial-{run_id}"
    path.mkdir(parents=True)  # fails if it exists: two runs never share a folder, even in two notebooks at once
    return path


def environment() -> dict:
    """What a reader needs to reproduce a run: versions, the CPUs it had, git commit."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),  # the machine's
        "usable_cores": cpus.cores(),  # what the lab may use of it: affinity and cgroup quota
        "affinity": cpus.usable_cpus(),
        "cgroup_quota": cpus.cgroup_quota(),
        "packages": versions,
        "git_commit": _git_commit(),
    }


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


@dataclass
class RunResult:
    """One load run: its tidy row, its per-second history and the folder it lives in."""

    row: dict
    history: pd.DataFrame = field(repr=False)
    path: Path
    manifest: dict = field(repr=False)

    @property
    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([self.row])

    @property
    def valid(self) -> bool:
        return bool(self.row["valid"])

    @property
    def window(self) -> tuple[float, float]:
        """The run's measurement window, (start, end) in epoch seconds: what its figures count."""
        return window(self.row)


def window(row: Mapping) -> tuple[float, float]:
    """A run row's measurement window, (start, end) in epoch seconds."""
    return row["window_start"], row["window_start"] + row["window_s"]


def finish(tmp: Path, manifest: dict, history: pd.DataFrame) -> RunResult:
    """Write the manifest and history into `tmp`, then publish the folder under its run id.

    The folder appears under its final name complete or not at all: it is written under a
    hidden name, flushed to disk, then renamed in one step (a crash or a kill in between
    leaves a `.partial-` folder, which `load_runs` never reads).
    """
    final = tmp.parent / manifest["run_id"]
    if final.exists():
        raise FileExistsError(f"run {manifest['run_id']} already exists: a run is never overwritten")
    with open(tmp / "history.csv", "w", newline="") as f:
        history.to_csv(f, index=False)
        _flush(f)
    with open(tmp / "manifest.json", "w") as f:
        json.dump(manifest, f, indent=2, default=str)
        _flush(f)
    _fsync_dir(tmp)
    os.rename(tmp, final)  # atomic on one file system; fails rather than replace a non-empty folder
    _fsync_dir(final.parent)
    return RunResult(row=manifest["result"], history=history, path=final, manifest=manifest)


def attach(run_id: str, columns: dict) -> Path:
    """Keep `columns`, measured beside run `run_id` while it ran (lessons/one_slow_route.py), in its folder as BESIDE.

    The run's own record stays as it was written; `load_runs` adds these columns to its row. Once
    only: a second call for the same run is FileExistsError, as a run is never overwritten.
    """
    columns = declared.beside(columns)  # every column is declared in columns.py, as a run's row's are
    folder = runs_dir() / run_id
    if not (folder / "manifest.json").exists():
        raise FileNotFoundError(f"no run {run_id} in {runs_dir()}")
    final = folder / BESIDE
    if final.exists():
        raise FileExistsError(f"run {run_id} already has what was measured beside it: it is never overwritten")
    tmp = folder / f".{BESIDE}.partial"
    with open(tmp, "w") as f:
        json.dump(columns, f, indent=2, default=str)
        _flush(f)
    os.rename(tmp, final)
    return final


def _beside(folder: Path) -> dict:
    """The columns `attach` kept beside a run, if any."""
    try:
        got = json.loads((folder / BESIDE).read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return got if isinstance(got, dict) else {}


def _flush(f: IO[str]) -> None:
    # Without it, a power cut soon after the rename can leave a published run with an empty manifest.
    f.flush()
    os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load_runs(lesson: str | None = None, root: Path | None = None) -> pd.DataFrame:
    """Every complete run on disk as one DataFrame (one row per run), oldest first."""
    root = root or runs_dir()
    rows = []
    for manifest_path in sorted(root.glob("[!.]*/manifest.json")):
        try:
            manifest = json.loads(manifest_path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if not isinstance(manifest, dict) or not isinstance(manifest.get("result"), dict):
            continue  # not a manifest this lab wrote
        if lesson is None or manifest.get("lesson") == lesson:
            rows.append({**manifest["result"], **_beside(manifest_path.parent)})
    frame = pd.DataFrame(rows)
    return frame.sort_values("started_at", ignore_index=True) if rows else frame


COLUMNS = [
    "pattern",
    "users",
    "tasks",
    "io_ms",
    "cpu_n",
    "workers",
    "rps",
    "predicted_before_rps",  # the prediction made before the run; the next two explain it after, at its own CPU
    "predicted_rps",
    "ratio",
    "p50_ms",
    "p95_ms",
    "predicted_ms",
    "failures",
    "locust_cpu",
    "server_cpu",
    "valid",
    "problems",
]


def table(frame: pd.DataFrame, extra: list[str] | None = None) -> pd.DataFrame:
    """The columns a reader needs, rounded for the eye, with each pattern's `label` (how it is written) beside it."""
    cols = [c for c in [*(extra or []), *COLUMNS] if c in frame.columns]
    shown = frame[cols].copy()
    if "pattern" in cols:  # for the eye only: `pattern` stays the name the code filters on
        shown.insert(cols.index("pattern") + 1, "label", shown["pattern"].map(pattern_label))
    return shown.round(
        {
            "rps": 1,
            "predicted_before_rps": 1,
            "predicted_rps": 1,
            "ratio": 3,
            "p50_ms": 1,
            "p95_ms": 1,
            "predicted_ms": 1,
            "locust_cpu": 2,
            "server_cpu": 2,
        }
    )


def compare(
    frame: pd.DataFrame, column: str, numerator: str, denominator: str, by: str = "pattern", on: str = "users"
) -> pd.DataFrame:
    """`column` of two groups side by side for each value of `on`, with their ratio."""
    wide = frame.pivot_table(index=on, columns=by, values=column)
    out = wide[[numerator, denominator]].copy()
    out["ratio"] = out[numerator] / out[denominator]
    return out.reset_index()


Pick = Literal["last", "min", "max", "furthest"]  # which of several ratios a lesson reads: see `ratio`


def ratio(
    frame: pd.DataFrame,
    column: str,
    numerator: str,
    denominator: str,
    *,
    pick: Pick = "last",
    at_least: float = -math.inf,
    under: float = math.inf,
    on: str = "users",
) -> float:
    """One of `compare`'s ratios (by pattern), over the rows whose `on` lies in [`at_least`, `under`).

    `pick`: the last (at the most `on`), the smallest, the largest, or the furthest from 1 either
    way (`model.furthest`); NaN where no row is left, so that a claim on it fails.
    """
    table = compare(frame, column, numerator, denominator, on=on)
    ratios = table.loc[(table[on] >= at_least) & (table[on] < under), "ratio"].dropna()
    if ratios.empty:
        return math.nan
    if pick == "furthest":
        return model.furthest(ratios)
    return float(ratios.iloc[-1] if pick == "last" else ratios.agg(pick))


def miss(ratios: pd.Series) -> float:
    """How far the ratio furthest from 1 lies from it, either way: 0.04 where every one is within 4%."""
    return float((ratios - 1).abs().max())


def tagged(frames: dict[str, pd.DataFrame], column: str) -> pd.DataFrame:
    """The runs of each of `frames` in one frame, `column` naming the key each came under (say, the client)."""
    return pd.concat([frame.assign(**{column: key}) for key, frame in frames.items()], ignore_index=True)


K = TypeVar("K", bound=Hashable)  # what names a run in a lesson's table: a (pattern, users) pair, a label


def in_order(measured: Mapping[K, RunResult], order: Iterable[K]) -> pd.DataFrame:
    """The rows of `measured`'s runs (as `run_plans` returns them, by key) in `order`, one row per run."""
    return pd.DataFrame([measured[key].row for key in order])
