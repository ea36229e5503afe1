"""The course in one table (lesson 99): every run on disk against the model, and the articles' headlines beside ours.

Nothing here measures or starts a server: it reads the runs that lessons left under
data/runs/ (`load_runs`). `PUBLISHED` holds each article's headline figure as a reference,
typed in from the article (../shared/seeds/) with the raw numbers it comes from; `headlines`
takes the same ratio from our runs, on the runs nearest to the article's own setting.
"""

from __future__ import annotations

import math
import os
import textwrap
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import pandas as pd

from labserver.charts import plots  # noqa: F401 - the course's chart theme
from labserver.theory.model import predict

GOOD = 0.25  # a run within ±25% of its prediction counts as explained by the model
CORES = os.cpu_count() or 1  # seed 000 ran as many workers as its machine had cores


@dataclass(frozen=True)
class Headline:
    """One article's headline figure, as a ratio, and where our runs hold the same ratio."""

    seed: str
    lesson: str  # prefix of the lesson that reproduces it, e.g. "02"
    what: str
    published: float  # the article's own figure, as a ratio
    source: str  # the raw published numbers behind it
    column: str  # the column of our runs the ratio is taken on
    numerator: dict
    denominator: dict | None = None  # None: the numerator's own value (a rate, or measured / predicted)
    near: dict = field(default_factory=dict)  # the article's setting: take our runs nearest to it


# Published figures (references, not measurements of ours): each article's numbers as it printed them.
PUBLISHED = [
    Headline(
        "002",
        "01",
        "p95 latency, async def / def at 100 concurrent requests",
        150 / 300,
        "p95 ≈ 150 ms vs ≈ 300 ms, ab -n1000 -c100, 100 ms sleep",
        "p95_ms",
        {"pattern": "sequential"},
        {"pattern": "threadpool"},
        {"users": 100},
    ),
    Headline(
        "003",
        "02",
        "req/s, asyncio.gather / three awaits in order",
        97.33 / 32.24,
        "97.33 vs 32.24 req/s, Locust 500 users, 2 workers, 3 × 5 s",
        "rps",
        {"pattern": "gather"},
        {"pattern": "sequential"},
        {"users": 500},
    ),
    Headline(
        "003",
        "02",
        "req/s, dependent / independent awaits",
        32.25 / 32.24,
        "32.25 vs 32.24 req/s, same setting",
        "rps",
        {"pattern": "dependent"},
        {"pattern": "sequential"},
        {"users": 500},
    ),
    Headline(
        "003",
        "02",
        "sync baseline, measured / predicted req/s",
        5.29 / predict("threadpool", 500, tasks=3, io_ms=5000, threads=40, workers=2).rps,
        "5.29 req/s vs the model's 2 workers × 40 threads / 15 s = 5.33",
        "ratio",
        {"pattern": "threadpool"},
        None,
        {"users": 500},
    ),
    Headline(
        "004",
        "06",
        "req/s, thread pool / loop of requests, 100 requests to a def endpoint",
        191.74 / 15.84,
        "191.74 vs 15.84 req/s, 50 ms sleep, one thread per request",
        "rps",
        {"client": "threadpool", "pattern": "threadpool"},
        {"client": "loop", "pattern": "threadpool"},
        {"requests": 100, "users": 100},
    ),
    Headline(
        "004",
        "06",
        "req/s, aiohttp / thread pool, 1,000 requests to an async endpoint",
        1031.05 / 316.08,
        "1,031.05 vs 316.08 req/s, 50 ms asyncio.sleep, 1,000 in flight",
        "rps",
        {"client": "aiohttp", "pattern": "sequential"},
        {"client": "threadpool", "pattern": "sequential"},
        {"requests": 1000, "users": 1000},
    ),
    Headline(
        "000",
        "04",
        "p95 latency, CPU-heavy async def, --workers = cores / one worker",
        50 / 90,
        "≈ 50 vs ≈ 90, read off its chart: fib + sleep, 6 workers on 6 cores vs its one-process versions",
        "p95_ms",
        {"pattern": "sequential"},
        {"pattern": "sequential", "workers": 1},
        {"workers": CORES, "cpu_n": 20},
    ),
    Headline(
        "001",
        "05",
        "share of requests failed, time.sleep inside async def, timeout < queue",
        8089 / 9992,
        "8,089 of 9,992 failed (k6, its 60 s timeout)",
        "failure_rate",
        {"pattern": "blocking"},
        None,
        {"timeout_s": 0.001},
    ),
    Headline(
        "001",
        "07",
        "req/s, async / sync PostgreSQL SELECT",
        2007.86 / 1123.60,
        "2,007.86 vs 1,123.60 req/s (k6)",
        "rps",
        # on a server free to use every core, as seed 001's: lesson 07 also runs one pinned to one core
        {"pattern": "async_select", "cpus": ""},
        {"pattern": "sync_select", "cpus": ""},
        {"users": 10_000},
    ),
]


def _lesson(runs: pd.DataFrame, prefix: str) -> pd.DataFrame:
    return runs[runs["lesson"].fillna("").astype(str).str.startswith(prefix)] if "lesson" in runs else runs.iloc[0:0]


def _nearest(values: pd.Series, target: float) -> float:
    """The value closest to `target`, on a log scale for positive numbers (users 80 is nearer 100 than 160 is)."""
    values = values.dropna().unique()
    if target > 0 and all(v > 0 for v in values):
        return min(values, key=lambda v: abs(math.log(v / target)))
    return min(values, key=lambda v: abs(v - target))


def select(runs: pd.DataFrame, where: dict, near: dict) -> pd.DataFrame:
    """The valid runs matching `where`, then those nearest to `near` on every column `where` leaves free."""
    rows = runs[runs["valid"].astype(bool)] if "valid" in runs else runs
    for key, value in where.items():
        if key not in rows:
            rows = rows.iloc[0:0]
            continue
        column = rows[key].fillna("") if isinstance(value, str) else rows[key]  # "" (unset) may read back as NaN
        rows = rows[column == value]
    for key, target in near.items():
        if key in rows and key not in where and rows[key].notna().any():
            rows = rows[rows[key] == _nearest(rows[key], target)]
    return rows


def headlines(runs: pd.DataFrame, published: list[Headline] | None = None) -> pd.DataFrame:
    """Each published headline beside the same ratio from our runs (NaN, with a note, where we have none)."""
    out = []
    for h in published or PUBLISHED:
        mine = _lesson(runs, h.lesson)
        top = select(mine, h.numerator, h.near)
        bottom = select(mine, h.denominator, h.near) if h.denominator is not None else None
        ours, note = math.nan, ""
        if mine.empty:
            note = f"no runs of lesson {h.lesson} on disk"
        elif h.column not in mine or top.empty or (bottom is not None and bottom.empty):
            note = f"lesson {h.lesson} has no valid runs of this kind"
        else:
            ours = float(top[h.column].median())
            if bottom is not None:
                ours /= float(bottom[h.column].median())
            note = ", ".join(f"{k} {top[k].iloc[0]:g}" for k in h.near if k in top and k not in h.numerator)
        out.append(
            {
                "seed": h.seed,
                "lesson": h.lesson,
                "what": h.what,
                "published": h.published,
                "ours": ours,
                "ours / published": ours / h.published,
                "our setting": note,
                "article": h.source,
            }
        )
    return pd.DataFrame(out)


def patterns(runs: pd.DataFrame) -> pd.DataFrame:
    """Each lesson × pattern (× client, for lesson 06): how its valid runs compare with the model."""
    cols = ["lesson", "pattern", "client", "runs", "valid", "median ratio", "lowest", "highest", "within ±25%"]
    if runs.empty or "ratio" not in runs:
        return pd.DataFrame(columns=cols)
    frame = runs.assign(
        client=runs["client"].fillna("") if "client" in runs else "",
        ok=runs["valid"].astype(bool),
        lesson=runs["lesson"].fillna("(no lesson)"),
        pattern=runs["pattern"].fillna("?"),
    )
    frame["ratio"] = pd.to_numeric(frame["ratio"], errors="coerce")
    rows = []
    for (lesson, pattern, client), group in frame.groupby(["lesson", "pattern", "client"], sort=True):
        ratios = group.loc[group["ok"], "ratio"].dropna()
        rows.append(
            {
                "lesson": lesson,
                "pattern": pattern,
                "client": client,
                "runs": len(group),
                "valid": int(group["ok"].sum()),
                "median ratio": ratios.median(),
                "lowest": ratios.min(),
                "highest": ratios.max(),
                "within ±25%": ((ratios - 1).abs() <= GOOD).mean(),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def valid_ratios(runs: pd.DataFrame) -> pd.Series:
    """measured / predicted of every valid run that has a prediction."""
    if runs.empty or "ratio" not in runs:
        return pd.Series(dtype=float)
    return pd.to_numeric(runs.loc[runs["valid"].astype(bool), "ratio"], errors="coerce").dropna()


def chart(runs: pd.DataFrame, heads: pd.DataFrame, title: str) -> plt.Figure:
    """Top: every valid run's measured / predicted, per lesson and pattern. Bottom: each headline, theirs and ours."""
    shown = heads.dropna(subset=["ours"]).reset_index(drop=True)
    rows = (max(4, _groups(runs)), max(3, 1.4 * len(shown)))  # headline labels take two lines
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(11, 2.5 + 0.3 * sum(rows)), height_ratios=rows, layout="constrained"
    )
    frame = runs[runs["valid"].astype(bool)].copy() if "valid" in runs else runs.copy()
    if not frame.empty:
        frame["ratio"] = pd.to_numeric(frame["ratio"], errors="coerce")  # a run without a prediction holds None
        frame = frame.dropna(subset=["ratio"])
        # pandas keeps a missing value missing through astype(str): fill first
        frame["group"] = frame["lesson"].fillna("--").astype(str).str[:2] + " · " + frame["pattern"].fillna("?")
        if "client" in frame:
            frame["group"] += frame["client"].map(lambda c: f" · {c}" if isinstance(c, str) and c else "")
        frame = frame.sort_values("group", ascending=False)  # lesson 00 at the top
        top.scatter(frame["ratio"], frame["group"], s=18, alpha=0.6, color="#4c72b0", label="one run")
        medians = frame.groupby("group", sort=False)["ratio"].median()
        top.scatter(medians.values, medians.index, marker="|", s=300, color="black", label="median")
        top.legend(fontsize="small", loc="lower right")
    top.axvline(1, color="grey", lw=1)
    top.axvspan(1 - GOOD, 1 + GOOD, color="grey", alpha=0.1)
    top.set(
        xlabel="measured / predicted throughput (1 = the model; band ±25%)",
        ylabel="lesson · pattern · client",
        title="every run against the model",
    )
    y = [textwrap.fill(f"seed {r.seed} · {r.lesson}: {r.what}", 50) for r in shown.itertuples()][::-1]
    bottom.hlines(y, shown["published"][::-1], shown["ours"][::-1], color="grey", lw=1)
    bottom.scatter(shown["published"][::-1], y, marker="D", s=50, color="grey", label="the article's", zorder=3)
    bottom.scatter(shown["ours"][::-1], y, s=60, color="#dd8452", label="ours", zorder=3)
    bottom.set(xlabel="the headline ratio (log scale)", title="each article's headline beside ours")
    bottom.tick_params(axis="y", labelsize="small")
    bottom.margins(y=0.15)
    if len(shown):  # a log axis needs data
        bottom.set_xscale("log")
        values = pd.concat([shown["published"], shown["ours"]])
        bottom.set_xlim(values.min() / 1.4, values.max() * 1.4)
        bottom.xaxis.set_major_locator(mticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        bottom.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}"))
        bottom.xaxis.set_minor_formatter(mticker.NullFormatter())
        bottom.legend(fontsize="small", loc="best")
    fig.suptitle(title, fontweight="bold")
    return fig


def _groups(runs: pd.DataFrame) -> int:
    return len(runs.drop_duplicates([c for c in ("lesson", "pattern", "client") if c in runs])) if len(runs) else 0


def overview(runs: pd.DataFrame, where: str = "") -> str:
    """One sentence on what is on disk, or what to do when nothing is."""
    if runs.empty:
        return (
            f"No runs on disk{f' in {where}' if where else ''}: there is nothing to summarise yet. Run the lessons "
            "first (`make figures` runs them all, or open any lesson and run it), then re-run this notebook."
        )
    lessons = runs["lesson"].fillna("(no lesson)").value_counts().sort_index() if "lesson" in runs else pd.Series()
    each = ", ".join(f"{name} ({n})" for name, n in lessons.items())
    valid = int(runs["valid"].astype(bool).sum()) if "valid" in runs else len(runs)
    return f"{len(runs)} runs on disk{f' in {where}' if where else ''}, {valid} of them valid, from: {each}."


def lesson_runs(runs: pd.DataFrame, prefixes: list[str] | tuple[str, ...] = ()) -> pd.DataFrame:
    """The runs that belong to a lesson (to one of `prefixes`, if given): a run made by hand has no lesson."""
    if runs.empty or "lesson" not in runs:
        return runs.iloc[0:0]
    named = runs[runs["lesson"].notna() & (runs["lesson"].astype(str) != "")]
    return named[named["lesson"].astype(str).str.startswith(tuple(prefixes))] if prefixes else named
