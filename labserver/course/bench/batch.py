"""The batch as `make figures` runs it, timed: its wall time and the part spent inside measurement windows."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from labserver.course import fidelity
from labserver.harness.rows import results
from labserver.paths import ROOT


def windows(runs: pd.DataFrame, t0: float, t1: float) -> pd.DataFrame:
    """Per lesson, the runs started between t0 and t1 (epoch s): how many, and their seconds inside measurement windows.

    A Locust run's window is `window_s` (after the warm-up); a client run (lesson 06) has no
    warm-up and is measured for its whole `wall_s`.
    """
    if runs.empty or "started_at" not in runs:
        return pd.DataFrame({"runs": [], "measuring_s": []}, index=pd.Index([], name="lesson"))
    started = pd.to_datetime(runs["started_at"], utc=True, errors="coerce").map(lambda t: t.timestamp())
    mine = runs[(started >= int(t0)) & (started <= t1)]  # started_at is rounded down to the second
    window = mine["window_s"] if "window_s" in mine else pd.Series(float("nan"), index=mine.index)
    if "wall_s" in mine:
        window = window.fillna(mine["wall_s"])
    lesson = mine["lesson"].fillna("(none)") if "lesson" in mine else pd.Series("(none)", index=mine.index)
    frame = pd.DataFrame({"lesson": lesson, "measuring_s": window.fillna(0.0)})
    return frame.groupby("lesson").agg(runs=("measuring_s", "size"), measuring_s=("measuring_s", "sum"))


def measuring_s(runs: pd.DataFrame, t0: float, t1: float) -> tuple[float, int]:
    """Seconds inside measurement windows, and how many runs, of the runs started between t0 and t1."""
    per_lesson = windows(runs, t0, t1)
    return float(per_lesson["measuring_s"].sum()), int(per_lesson["runs"].sum())


def lesson_walls(executed: Path, since: float) -> dict[str, float]:
    """Wall time (s) of each lesson papermill executed into `executed` since `since` (epoch s)."""
    walls = {}
    for path in sorted(executed.glob("*.ipynb")):
        if path.stat().st_mtime < since:
            continue
        try:
            walls[path.stem] = float(json.loads(path.read_text())["metadata"]["papermill"]["duration"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return walls


def batch(profile: str, env: dict, log: Path, root: Path) -> dict:
    """The batch as `make figures` runs it (`-m labserver.course.batch`), timed; runs read back from `root`/runs."""
    started, t0 = time.perf_counter(), time.time()
    with open(log, "w") as out:
        code = subprocess.call(
            [sys.executable, "-m", "labserver.course.batch", "--profile", profile],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    wall_s, t1 = time.perf_counter() - started, time.time()
    made = results.load_runs(root=root / "runs")
    per_lesson = windows(made, t0, t1)
    explained = fidelity.table(made[pd.to_datetime(made["started_at"]).map(lambda t: t0 <= t.timestamp() <= t1)])
    return {
        "profile": profile,
        "wall_s": wall_s,
        "measuring_s": float(per_lesson["measuring_s"].sum()),
        "runs": int(per_lesson["runs"].sum()),
        "exit_code": code,
        "lessons": _lessons(lesson_walls(root / "executed", t0), per_lesson),
        "fidelity": explained.to_dict("records"),  # share of valid runs within ±10% of their prediction
        "log": str(log),
    }


def _lessons(walls: dict[str, float], per_lesson: pd.DataFrame) -> list[dict]:
    """Each lesson's wall time beside its runs and their seconds inside measurement windows."""
    return [
        {
            "lesson": name,
            "wall_s": wall,
            "runs": int(per_lesson["runs"].get(name, 0)),
            "measuring_s": float(per_lesson["measuring_s"].get(name, 0.0)),
        }
        for name, wall in walls.items()
    ]
