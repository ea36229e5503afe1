"""Lesson 05's charts: what a blocked worker serves, whose requests it answers, and what a timeout leaves of them."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import MaxNLocator

from labserver.charts import plots
from labserver.charts.plots import COLORS, INVALID
from labserver.harness.rows.results import RunResult, ratio
from labserver.theory.timeouts import Outlook


def blocked_chart(runs: pd.DataFrame, cap: float) -> plt.Figure:
    """Each run's req/s beside its prediction, titled with blocking's range against the cap and async's factor.

    `runs` holds `blocking` at each users value and `sequential` (async) at the most users.
    """
    blocked = runs[runs["pattern"] == "blocking"]
    top = runs["users"].max()
    async_x = ratio(runs, "rps", "sequential", "blocking")  # at the most users, where both ran
    title = (
        f"blocking serves {blocked['rps'].min():.1f}–{blocked['rps'].max():.1f} req/s "
        f"at {blocked['users'].min()}–{top} users (cap {cap:.0f}); async serves {async_x:.0f}×"
    )
    labelled = runs.assign(run=runs["pattern"] + " · " + runs["users"].astype(str) + " users")
    fig = plots.bars(labelled, title=title, x="run")
    fig.axes[0].tick_params(axis="x", labelrotation=15)
    return fig


def fair_share_chart(per_user: pd.DataFrame, fair_users: int, duration_s: float) -> plt.Figure:
    """`answers_chart` of a blocked run, titled with the users it answered beside those a fair queue would have."""
    answered = int((per_user["answered"] > 0).sum())
    title = (
        f"In {duration_s} s the blocked worker answered {answered} of {len(per_user)} users\n"
        f"(a fair queue would have answered {fair_users})"
    )
    return answers_chart(per_user, title)


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


def timeout_run_chart(run: RunResult, expected: Outlook, cap: float) -> plt.Figure:
    """`timeouts_chart` of a timeout run, titled with its failure rate beside the floor and a fair queue's."""
    title = (
        f"{expected.timeout_s:g} s timeout: {run.row['failure_rate']:.0%} failed "
        f"(floor {expected.floor:.0%}, fair queue {expected.fair.failure_rate:.0%})"
    )
    return timeouts_chart(run.history, cap, title)
