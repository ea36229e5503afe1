"""Which worker served each request: a run's requests spread over uvicorn's `--workers`.

Every reply names its worker in the X-Worker-Pid header, and Locust keeps that pid as the
4th element of each request's record (locustfiles/pattern.py). The kernel, not uvicorn,
hands each new connection to one worker, and Locust's users keep theirs for the whole run,
so the spread can be far from even. Introduced in lesson 04_workers.
"""

from __future__ import annotations

import math
from collections import Counter

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns


def counts(per_user: list[list[tuple]], since: float = -math.inf) -> dict[int, int]:
    """Requests per worker pid among the records that finished at or after `since`.

    Records without a pid (an older locustfile, or a request that got no reply) are skipped.
    """
    seen = Counter(r[3] for records in per_user for r in records if r[0] >= since and len(r) > 3 and r[3] is not None)
    return dict(sorted(seen.items()))


def per_worker(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, worker): its requests and share, from the runs' `worker_requests` column.

    Workers are numbered 1..k within a run, busiest first, since pids mean nothing across runs.
    """
    rows = []
    for run in frame.itertuples():
        served = {int(pid): n for pid, n in (getattr(run, "worker_requests", None) or {}).items()}  # JSON keys are str
        total = sum(served.values())
        ranked = sorted(served.items(), key=lambda item: -item[1])
        for rank, (pid, n) in enumerate(ranked, start=1):
            rows.append({"run_id": run.run_id, "pattern": run.pattern, "users": run.users, "workers": run.workers,
                         "worker": rank, "pid": pid, "requests": n, "share": n / total})  # fmt: skip
    return pd.DataFrame(rows, columns=["run_id", "pattern", "users", "workers", "worker", "pid", "requests", "share"])


def busiest_share(served: dict) -> float:
    """The busiest worker's share of the requests: 1/k when k workers split them evenly, 1.0 when one did all."""
    total = sum(served.values()) if served else 0
    return max(served.values()) / total if total else math.nan


def bars(spread: pd.DataFrame, title: str) -> plt.Figure:
    """Requests per worker, one panel per pattern, one group of bars per `workers` setting."""
    patterns = list(dict.fromkeys(spread["pattern"]))
    fig, axes = plt.subplots(1, len(patterns), figsize=(4.5 * len(patterns), 4), sharey=False, squeeze=False)
    for ax, pattern in zip(axes[0], patterns, strict=True):
        part = spread[spread["pattern"] == pattern]
        sns.barplot(part, x="workers", y="requests", hue="worker", ax=ax, palette="crest")
        ax.set(title=pattern, xlabel="uvicorn workers", ylabel="requests served (after warm-up)")
        ax.legend(title="worker (busiest first)", fontsize="small")
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout()
    return fig
