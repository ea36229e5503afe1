"""Lesson 07's pinned-core study: the fast SELECT on a server pinned to one core, beside one on any core.

The sync version's threads take turns on one GIL; spread over cores, each turn wakes a thread on
another core, its cache cold. A second server, pinned to one core, serves the fast SELECT beside
the first, and the sync runs repeat in mirrored rounds: how far the OS spreads the threads over
the cores moves from run to run, so claim 4 takes the median ratio (docs/evidence.md).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from labserver.harness.plans.plan import Run, mirrored
from labserver.harness.servers.launcher import LabServer
from labserver.postgres import database, runs
from labserver.theory import gil

if TYPE_CHECKING:
    from typing_extensions import Unpack

SELECTS = ["sync_select", "async_select"]
# async / sync this near 1, pinned, reads as a tie: one core closed the gap (Study.order)
GAP_CLOSED = 0.05


def servers(anywhere: LabServer, cpus: list[int], database_url: str, db: database.Database) -> list[LabServer]:
    """`anywhere`, and a server of its settings pinned to `cpus` (not yet started); `anywhere` alone if `cpus` is [].

    `db`, the lab's cluster: during the pinned server's runs it keeps off that core, as Locust
    does (harness/servers/isolate.py), and gets every core back for the other server's.
    """
    if not cpus:  # the OS cannot pin a process (macOS), or the lesson asked for no pinned runs
        return [anywhere]
    s = anywhere.settings
    pinned = database.lab_server(
        database_url, threads=s.threads, db_pool=s.db_pool, procs=s.procs, cpus=cpus, database=db
    )
    return [anywhere, pinned]


def parts(
    servers: list[LabServer], base: pd.DataFrame, count: int, users: int, **load: Unpack[runs.PlanKw]
) -> dict[str, list[Run]]:
    """The pinned server's runs of the fast SELECT, then `count` − 1 rounds of the sync one on both; {} if unpinned.

    The pinned server's own part ("pinned") runs its two versions async first, mirroring part
    2's order: a drift in the machine's speed falls on both. `load` is runs.plan's.
    """
    if len(servers) < 2:
        return {}
    anywhere, pinned = servers
    # the pinned server is priced just before its runs: the Predict table priced the other one
    return {"pinned": runs.plan(pinned, SELECTS[::-1], [users], base, foreseen=False, **load)} | rounds(
        anywhere, pinned, base, count - 1, users, **load
    )


def rounds(
    anywhere: LabServer, pinned: LabServer, base: pd.DataFrame, count: int, users: int, **load: Unpack[runs.PlanKw]
) -> dict:
    """`count` more rounds of the sync SELECT on a server on any core and on one pinned, side by side.

    In mirrored order after part 2's own pair (any core, then pinned): pinned, any, any, pinned, ...,
    so that a drift in the machine's speed falls on both. Parts named "round r, any" and "round r, pinned"
    (r from 1), for run_parts; `load` is plan's.
    """
    both = [("pinned", pinned), ("any", anywhere)]
    return {f"round {r + 1}, {where}": runs.plan(each, ["sync_select"], [users], base, foreseen=each is anywhere,
                                                 **load)
            for r, (where, each) in mirrored(both, count)}  # fmt: skip


def by_server(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The same runs on servers of different settings side by side: req/s and CPU per request, sync and async.

    `frames` maps a server's label (e.g. "pinned to CPU 1") to its runs, one per driver (see runs.frame).
    """
    both = pd.concat([rows.assign(server=label) for label, rows in frames.items()])
    wide = both.pivot_table(index="server", columns="driver", values=["rps", "server_ms"], sort=False)
    return pd.DataFrame(
        {
            "sync req/s": wide[("rps", "sync")],
            "async req/s": wide[("rps", "async")],
            "async / sync": wide[("rps", "async")] / wide[("rps", "sync")],
            "sync CPU ms per request": wide[("server_ms", "sync")],
            "async CPU ms per request": wide[("server_ms", "async")],
        }
    )


def _pairs(count: int) -> list[tuple[str, str]]:
    """Each round's two parts, (any core, pinned): round 0 is part 2's own ("fast", "pinned"), then `rounds`'."""
    return [("fast", "pinned"), *((f"round {r}, any", f"round {r}, pinned") for r in range(1, count))]


def sync_rounds(frames: dict[str, pd.DataFrame], count: int) -> pd.DataFrame:
    """The sync SELECT's runs on any core and pinned, round by round (see `pinned_ratios` for the rounds):
    the cores its worker kept busy, its CPU per request, the kernel's share of it, its threads'
    context switches per request, the share of the window its loop's thread ran and waited for a
    CPU, and its throughput over the model's (one core per worker)."""
    rows = []
    for r, (anywhere, one) in enumerate(_pairs(count)):
        for where, part in (("any core", anywhere), ("pinned", one)):
            run = frames[part].set_index("pattern").loc["sync_select"]
            rows.append(
                {
                    "round": r + 1,
                    "server": where,
                    "cores busy": run["server_cpu"],
                    "CPU ms per request": run["server_ms"],
                    "in the kernel": run.get("worker_kernel", math.nan),
                    "switches per request": run.get("worker_switches", math.nan),
                    "loop ran": run.get("worker_loop", math.nan),
                    "loop waited for a CPU": run.get("worker_waited", math.nan),
                    "measured / model": run["ratio"],
                }
            )
    return pd.DataFrame(rows)


def pinned_ratios(frames: dict[str, pd.DataFrame], count: int) -> list[float]:
    """The sync version's CPU per request pinned / on any core, round by round.

    Round 0 is part 2's own runs ("fast" and "pinned", one row per driver); rounds 1 to
    `count` − 1 are `rounds`'. How much the OS spreads the threads over the cores moves from run
    to run, so a claim takes their median.
    """

    def sync_ms(part: str) -> float:
        rows = frames[part]
        return float(rows.loc[rows["pattern"] == "sync_select", "server_ms"].iloc[0])

    return [sync_ms(one) / sync_ms(anywhere) for anywhere, one in _pairs(count)]


def pinned_flips(frames: dict[str, pd.DataFrame], count: int, side: int = 1) -> list[float]:
    """async / sync req/s on the pinned server (`side` 1; 0: on any core), against each round's sync run there: the
    async SELECT runs on each server once (part 2), the sync one each round, and which serves more moves from round
    to round as sync's CPU per request does."""

    def rps(part: str, pattern: str) -> float:
        rows = frames[part]
        return float(rows.loc[rows["pattern"] == pattern, "rps"].iloc[0])

    return [rps(("fast", "pinned")[side], "async_select") / rps(pair[side], "sync_select") for pair in _pairs(count)]


@dataclass(frozen=True)
class Study:
    """What the pinned runs show: part 2 on each server, and the sync runs round by round.

    Empty (`cpu` None) where there was no pinned server: the OS cannot pin a process (macOS).
    """

    cpu: int | None  # the core the pinned server ran on
    servers: pd.DataFrame  # part 2's runs on any core and pinned, side by side (by_server)
    ratios: list[float]  # the sync version's CPU per request pinned / on any core, round by round
    spread: pd.DataFrame  # the sync runs, round by round (sync_rounds)
    flips: list[float] = dataclasses.field(default_factory=list)  # async / sync req/s pinned, round by round
    anywhere: list[float] = dataclasses.field(default_factory=list)  # the same on any core, round by round

    @property
    def median(self) -> float:
        """Claim 4's figure: the median of `ratios` (NaN without a pinned server)."""
        return statistics.median(self.ratios) if self.ratios else math.nan

    @property
    def detail(self) -> str:
        """The claim's detail: the core, and each round's ratio."""
        each = ", ".join(f"{x:.2f}" for x in self.ratios)
        return f"pinned to CPU {self.cpu}; median of {len(self.ratios)} rounds: {each}"

    @property
    def medians(self) -> pd.DataFrame:
        """The sync runs' figures on any core and pinned, each the median over the rounds."""
        return self.spread.drop(columns="round").groupby("server", sort=False).median()

    @property
    def async_over_sync(self) -> float:
        """async / sync req/s on the pinned server in the first round, its two runs back to back (NaN without one):
        a later round's sync run can find the cores at another speed than async's one run did."""
        return self.flips[0] if self.cpu is not None and self.flips else math.nan

    def tables(self) -> list[pd.DataFrame]:
        """`servers` and `medians`, rounded for the eye, the medians' rows saying what they are ([] without a pinned
        server): round 1's any-core figures and the medians' differ, and a reader must see which is which."""
        if self.cpu is None:
            return []
        rounds = len(self.ratios)
        medians = self.medians.rename(index=lambda where: f"{where}, median of {rounds} rounds")
        return [self.servers.round(2), medians.round(2)]

    @property
    def order(self) -> str:
        """What one core did to async / sync req/s in the first round, against part 2's on any core: turned the order,
        closed the gap (within GAP_CLOSED of a tie), narrowed or widened it ("" without a pinned server)."""
        if self.cpu is None or not self.anywhere or not math.isfinite(self.async_over_sync):
            return ""
        pinned, anywhere = self.async_over_sync, self.anywhere[0]
        if (pinned - 1) * (anywhere - 1) < 0:
            moved = "turned the order"
        elif abs(pinned - 1) <= GAP_CLOSED:
            moved = "closed the gap"
        else:
            moved = "narrowed the gap" if abs(pinned - 1) < abs(anywhere - 1) else "widened the gap"
        return f"one core {moved}: async / sync {anywhere:.2f} on any core (part 2), {pinned:.2f} pinned"

    def __str__(self) -> str:
        if self.cpu is None:
            return "This OS cannot pin a process to a core: the pinned runs were skipped."
        return (
            "sync's CPU per request pinned / on any core, round by round: "
            + ", ".join(f"{x:.2f}" for x in self.ratios)
            + f"\nmedian: {self.median:.2f}\n"
            + f"{self.order}\n"
            + f"pinned, async / sync req/s in the first round, its two runs back to back: {self.async_over_sync:.2f}"
            + "; async's one run against each later round's sync run: "
            + (", ".join(f"{x:.2f}" for x in self.flips[1:]) or "none")
            + " (the cores' speed can move between runs)\n"
            + "on any core, async / sync req/s in the first round: "
            + ", then against each later round's sync run: ".join(
                [f"{self.anywhere[0]:.2f}", ", ".join(f"{x:.2f}" for x in self.anywhere[1:]) or "none"]
            )
        )

    @property
    def where_cpu_went(self) -> str:
        """Where the sync worker's CPU went on any core and pinned, medians over the rounds ("" without a pinned
        server): the cores, the kernel's share, context switches, the event loop's share of the window."""
        if self.cpu is None:
            return ""
        medians = self.medians
        return gil.spread(medians.loc["any core"], medians.loc["pinned"])


def study(frames: dict[str, pd.DataFrame], count: int, cpus: list[int]) -> Study:
    """The pinned-core study from run_parts' frames: `count` rounds (see `parts`) on a server pinned to `cpus`."""
    if not cpus:
        return Study(None, pd.DataFrame(), [], pd.DataFrame())
    # part 2's runs, the first round: the only one in which async runs too
    servers = by_server({"any core, round 1": frames["fast"], f"pinned to CPU {cpus[0]}, round 1": frames["pinned"]})
    return Study(
        cpus[0],
        servers,
        pinned_ratios(frames, count),
        sync_rounds(frames, count),
        pinned_flips(frames, count),
        pinned_flips(frames, count, side=0),
    )
