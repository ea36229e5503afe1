"""Which worker served each request: a run's requests spread over uvicorn's `--workers`.

Every reply names its worker in the X-Worker-Pid header, and Locust keeps that pid as the
4th element of each request's record (locustfiles/pattern.py). The kernel, not uvicorn,
hands each new connection to one worker, and Locust's users keep theirs for the whole run,
so the spread can be far from even. Introduced in lesson 04_workers.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from labserver.labels import pattern_label

KEYS = ["run_id", "pattern", "users", "workers"]


def per_worker(frame: pd.DataFrame, extra: list[str] | None = None) -> pd.DataFrame:
    """One row per (run, worker): its requests and share, from the runs' `worker_requests` column.

    Workers are numbered 1..k within a run, busiest first; `extra` names more columns of the runs to keep.
    """
    keys = [*KEYS, *(extra or [])]
    rows = []
    for run in frame.to_dict("records"):
        served = {int(pid): n for pid, n in (run.get("worker_requests") or {}).items()}  # JSON keys are str
        total = sum(served.values())
        ranked = sorted(served.items(), key=lambda item: -item[1])
        for rank, (pid, n) in enumerate(ranked, start=1):
            rows.append({**{k: run[k] for k in keys}, "worker": rank, "pid": pid, "requests": n, "share": n / total})
    return pd.DataFrame(rows, columns=[*keys, "worker", "pid", "requests", "share"])


def busiest_share(served: dict) -> float:
    """The busiest worker's share of the requests: 1/k when k workers split them evenly, 1.0 when one did all."""
    total = sum(served.values()) if served else 0
    return max(served.values()) / total if total else math.nan


def busiest_shares(spread: pd.DataFrame) -> pd.Series:
    """Per run with more than one worker, the busiest worker's share of its requests (from per_worker's rows)."""
    return spread[spread["workers"] > 1].groupby("run_id")["share"].max()


def all_served(runs: pd.DataFrame, up_to: float) -> float:
    """The share of the runs with at most `up_to` workers in which every worker served requests (nan: no such run)."""
    some = runs[runs["workers"] <= up_to]
    return (some["workers_seen"] == some["workers"]).mean()


def left_idle(runs: pd.DataFrame, label: str = "workload") -> list[str]:
    """One line for each run in which some worker served no request: the kernel gave every connection to the others."""
    return [
        f"{getattr(run, label)}, {run.workers} workers: only {run.workers_seen} served requests in one run "
        f"({run.rps:.0f} req/s): the kernel gave every connection to the others"
        for run in runs[runs["workers_seen"] < runs["workers"]].itertuples()
    ]


def bars(spread: pd.DataFrame, title: str, panel: str = "pattern") -> plt.Figure:
    """Requests per worker pid, summed over a panel's runs: one panel per `panel` value, one group per `workers`.

    Within a group the bars run from the busiest worker to the idlest, each labelled with its pid.
    """
    panels = list(dict.fromkeys(spread[panel]))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 4), squeeze=False)
    palette = sns.color_palette("crest", int(spread["workers"].max()))
    for ax, name in zip(axes[0], panels, strict=True):
        part = spread[spread[panel] == name]
        totals = part.groupby(["workers", "pid"], as_index=False)["requests"].sum()
        settings = sorted(totals["workers"].unique())
        width = 0.8 / max(settings)
        for i, w in enumerate(settings):
            group = totals[totals["workers"] == w].sort_values("requests", ascending=False)
            for rank, (pid, n) in enumerate(zip(group["pid"], group["requests"], strict=True)):
                bar = ax.bar(i - 0.4 + (rank + 0.5) * width, n, width, color=palette[rank])
                ax.bar_label(bar, labels=[f"pid {pid}"], label_type="center", rotation=90, fontsize="x-small")
        ax.set_xticks(range(len(settings)), [str(w) for w in settings])
        ax.set(
            title=pattern_label(name) if panel == "pattern" else str(name),
            xlabel="uvicorn workers",
            ylabel="requests served (after warm-up)",
        )
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout()
    return fig
