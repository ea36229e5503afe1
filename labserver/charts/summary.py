"""Lesson 99's chart: every run against the model, and each article's headline beside ours."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import pandas as pd

from labserver.labels import client_label, pattern_label


def chart(runs: pd.DataFrame, heads: pd.DataFrame, title: str, good: float = 0.25) -> plt.Figure:
    """Top: every valid run's measured / predicted, explained after it (a dot) and before it (a ring, where the run
    has one), per lesson and pattern; the band is ±`good`. Bottom: each headline, theirs and ours."""
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
        frame["group"] = (
            frame["lesson"].fillna("--").astype(str).str[:2] + " · " + frame["pattern"].fillna("?").map(pattern_label)
        )
        if "client" in frame:
            frame["group"] += frame["client"].map(lambda c: f" · {client_label(c)}" if isinstance(c, str) and c else "")
        frame = frame.sort_values("group", ascending=False)  # lesson 00 at the top
        top.scatter(frame["ratio"], frame["group"], s=18, alpha=0.6, color="#4c72b0", label="one run, explained after")
        if "ratio_before" in frame:
            before = pd.to_numeric(frame["ratio_before"], errors="coerce")  # NaN (none made before it): not drawn
            top.scatter(before, frame["group"], s=30, facecolors="none", edgecolors="#dd8452",
                        label="one run, predicted before it")  # fmt: skip
        medians = frame.groupby("group", sort=False)["ratio"].median()
        top.scatter(medians.values, medians.index, marker="|", s=300, color="black", label="median, explained after")
        top.legend(fontsize="small", loc="lower right")
    top.axvline(1, color="grey", lw=1)
    top.axvspan(1 - good, 1 + good, color="grey", alpha=0.1)
    top.set(
        xlabel=f"measured / predicted throughput (1 = the model; band ±{good:.0%})",
        ylabel="lesson · endpoint · client",
        title="every run against the model",
    )
    y = [textwrap.fill(f"{r.article} · {r.lesson}: {r.what}", 62) for r in shown.itertuples()][::-1]
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
