"""Lesson 05's charts: whose requests a blocked worker answers, and what a client timeout leaves of them."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import MaxNLocator

from labserver.charts.plots import COLORS, INVALID


def answers_chart(per_user: pd.DataFrame, title: str) -> plt.Figure:
    """Requests answered per Locust user in one run, most answered first: a fair server gives each the same."""
    ranked = per_user.sort_values("answered", ascending=False, ignore_index=True)
    fig, ax = plt.subplots()
    ax.bar(ranked.index, ranked["answered"], color=COLORS["blocking"])
    locator = ax.yaxis.get_major_locator()
    if isinstance(locator, MaxNLocator):  # the default (AutoLocator) is one
        locator.set_params(integer=True)  # whole requests
    ax.set(title=title, xlabel="Locust user (most answered first)", ylabel="requests answered in the run")
    return fig


def timeouts_chart(history: pd.DataFrame, cap: float, title: str) -> plt.Figure:
    """Requests ending each second of a run, answered and timed out stacked, below the worker's cap (req/s)."""
    answered = history["rps"] - history["failures"]  # Locust counts a timed-out request as finished
    x = history["second"] + 0.5  # each bar in the middle of its second
    fig, ax = plt.subplots()
    ax.bar(x, answered, width=0.9, color=COLORS["blocking"], label="answered (measured)")
    ax.bar(x, history["failures"], width=0.9, bottom=answered, color=INVALID, alpha=0.5, label="timed out (measured)")
    ax.axhline(cap, color="grey", ls=":", label=f"the worker's cap: {cap:.0f} req/s")
    ax.set(title=title, xlabel="time since the run started (s)", ylabel="requests ending per second")
    ax.legend(fontsize="small")
    return fig
