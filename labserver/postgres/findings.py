"""What lesson 07's runs show: the tables the lesson reads and the figures its claims take.

Part 1, slow queries: each driver's throughput beside a connection's hold, alone and under load.
Part 2, the fast SELECT: each driver's CPU per request, and how far the pools are from binding.
Part 3, the fib sweep: async / sync by depth, where the two converge, and fib's share of the CPU.
Every figure comes from run_parts' frames and calibrate's prices before the runs (`base`), never typed in.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import pandas as pd

from labserver.harness.rows.results import compare
from labserver.harness.servers.launcher import LabServer
from labserver.postgres import runs
from labserver.theory import gil, pools
from labserver.theory.bottlenecks import Bottleneck


def holds(slow: pd.DataFrame, base: pd.DataFrame, io_ms: int) -> pd.DataFrame:
    """Part 1 by driver: req/s measured, predicted before the runs and at the hold measured under load (db_pool /
    hold), and a connection's hold alone and under load (ms). `io_ms` is each query's pg_sleep."""
    by = slow.set_index("driver")
    alone = by["pattern"].map(base["service_ms"] - base["cpu_ms"]) + io_ms  # the lone request's price
    return pd.DataFrame(
        {
            "req/s": by["rps"],
            "predicted before": by["predicted_before_rps"],
            "db_pool / hold under load": by["predicted_rps"],
            "hold alone: io_ms + S − CPU (ms)": alone,
            "hold under load, measured (ms)": by["db_hold_ms"],
        }
    ).round(1)


@dataclass(frozen=True)
class Fast:
    """Part 2, the fast SELECT: its runs, one per driver, and what the model bounds the sync one by."""

    runs: pd.DataFrame  # one run per driver (runs.frame)
    cpu_priced: pd.Series  # the server's CPU per request priced before the runs (ms), by driver, as the run is
    limits: dict[str, float]  # every bound the model puts on the sync SELECT (req/s), by name

    def rps(self, driver: str) -> float:
        return float(self.runs.set_index("driver").at[driver, "rps"])

    @property
    def ratio(self) -> float:
        """async / sync req/s."""
        return self.rps("async") / self.rps("sync")

    @property
    def headroom(self) -> float:
        """The sync SELECT's smaller pool bound over its req/s: far above 1, neither pool holds it back."""
        return pools.pool_headroom(self.limits, self.rps("sync"))

    @property
    def bounds(self) -> str:
        """The sync SELECT's two pool bounds, in words."""
        threads, connections = self.limits[Bottleneck.THREAD_POOL], self.limits[Bottleneck.CONNECTION_POOL]
        return f"thread pool {threads:,.0f} req/s, connection pool {connections:,.0f} req/s"

    @property
    def priced_cpu_ratio(self) -> float:
        """sync / async CPU per request as priced before the runs: the model's price of each."""
        return float(self.cpu_priced["sync"] / self.cpu_priced["async"])

    def cpu_table(self) -> pd.DataFrame:
        """Each driver's CPU per request as calibrate priced it (8 users, over as many connections as the run holds)
        and under load, and the cores its server kept busy."""
        under_load = self.runs.set_index("driver")
        users = int(under_load["users"].iloc[0])
        columns = {
            "CPU ms per request, priced: 8 users": self.cpu_priced,
            f"… under load, {users} users": under_load["server_ms"],
            "server CPU (cores)": under_load["server_cpu"],
        }
        return pd.DataFrame(columns).round(2)


def fast(server: LabServer, base: pd.DataFrame, rows: pd.DataFrame) -> Fast:
    """Part 2's findings from its runs (`rows`) on `server`, with calibrate's prices (`base`)."""
    by = rows.set_index("driver")
    sync = by.loc["sync"]
    # the connection pool at the hold measured before the runs, as the lesson prints it beside S and the CPU
    limits = runs.limits(server, sync["pattern"], int(sync["users"]), 0, 0, base, held=True)
    return Fast(rows, by["pattern"].map(base["cpu_ms"]), limits)


@dataclass(frozen=True)
class Sweep:
    """Part 3, the fib sweep: its runs, the rest of a request's CPU beside fib's, and its two ends' rounds."""

    runs: pd.DataFrame  # one run per depth (cpu_n) and driver (runs.frame)
    overhead_ms: float  # the costlier version's CPU per request priced before the runs, fib aside
    kept: list[float]  # what is left of the async edge at the deepest depth, round by round (runs.edge_rounds)
    # async / sync req/s by depth, round by round (runs.ratio_rounds): the rounds repeat the sweep's two ends
    rounds: tuple[dict[int, float], ...] = ()

    @property
    def shallow(self) -> int:
        return int(self.runs["cpu_n"].min())

    @property
    def deep(self) -> int:
        return int(self.runs["cpu_n"].max())

    @property
    def ratios(self) -> pd.Series:
        """async / sync req/s by depth: at a depth the rounds repeat, the median of its rounds (one round moves by a
        fifth on a machine whose cores change speed)."""
        ratios = compare(self.runs, "rps", "async", "sync", by="driver", on="cpu_n").set_index("cpu_n")["ratio"]
        for depth in ratios.index:
            each = [r[depth] for r in self.rounds if depth in r]
            if each:
                ratios[depth] = statistics.median(each)
        return ratios

    @property
    def converged(self) -> int | None:
        """The depth from which the two stay within pools.CONVERGED of each other; None: nowhere in the sweep."""
        return pools.converges_at(self.ratios.to_dict())

    @property
    def edge_kept(self) -> float:
        """Claim 5's figure: the median of `kept` over the rounds."""
        return statistics.median(self.kept)

    @property
    def share(self) -> pd.DataFrame:
        """The runs with each one's CPU per request and fib's share of it (pools.fib_share)."""
        return self.runs.assign(cpu_ms_per_request=self.runs["server_ms"], fib_share=pools.fib_share(self.runs))

    @property
    def at_deep(self) -> pd.DataFrame:
        """`share` at the deepest depth, by driver."""
        share = self.share
        return share[share["cpu_n"] == self.deep].set_index("driver")

    @property
    def rps_ratio(self) -> float:
        """async / sync req/s at the deepest depth."""
        return float(self.at_deep.at["async", "rps"] / self.at_deep.at["sync", "rps"])

    @property
    def cpu_ratio(self) -> float:
        """sync / async CPU per request at the deepest depth."""
        return float(self.at_deep.at["sync", "cpu_ms_per_request"] / self.at_deep.at["async", "cpu_ms_per_request"])

    @property
    def busy(self) -> dict[str, float]:
        """The cores each driver's server kept busy at the deepest depth."""
        return self.at_deep["server_cpu"].round(2).to_dict()

    @property
    def detail(self) -> str:
        """Claim 5's detail: each round, the ratios by depth, and where the two converge."""
        each = ", ".join(f"{x:.2f}" for x in self.kept)
        return (
            f"median of {len(self.kept)} rounds: {each}; ratios {self.ratios.round(2).to_dict()}; "
            f"within 15% from: {self.converged or 'nowhere'}"
        )

    def table(self) -> pd.DataFrame:
        """req/s, CPU per request and fib's share of it, by depth and driver."""
        values = ["rps", "cpu_ms_per_request", "fib_share"]
        return self.share.pivot_table(index="cpu_n", columns="driver", values=values).round(2)

    def explain(self) -> str:
        """The deepest depth in words: throughput beside CPU per request, and the async edge round by round."""
        each = ", ".join(f"{x:.2f}" for x in self.kept)
        return "\n".join(
            [
                f"At fib({self.deep}): cores busy {self.busy}; async / sync throughput {self.rps_ratio:.2f}, "
                f"sync / async CPU per request {self.cpu_ratio:.2f}.",
                f"async edge at fib({self.deep}) over the edge at fib({self.shallow}), round by round: {each}; "
                f"median {self.edge_kept:.2f}",
            ]
        )

    def extra_cpu(self, thread_cost: float, fib_ms: float) -> str:
        """Where the sync request's extra CPU at the deepest depth goes: fib's cost on many threads
        (cores.thread_cost at that depth, `fib_ms` its CPU on one thread), then gil.explain's split."""
        users = int(self.runs["users"].iloc[0])
        return "\n".join(
            [_thread_cost(self.deep, users, thread_cost), gil.explain(self.share, thread_cost, fib_ms, self.converged)]
        )


def _thread_cost(deep: int, users: int, cost: float) -> str:
    """fib's cost on many threads over one, in words: under 1, a change in the cores' speed between the two timings,
    since turns on the GIL only add CPU."""
    said = f"fib({deep}) on {users} threads at once costs {cost:.2f}× its CPU on one thread"
    if round(cost, 2) < 1:  # as printed: a 0.996 reads 1.00, no saving to explain
        why = "the cores' speed moved between the timings more than their order cancels (turns only add CPU)"
        return f"{said}: under 1, {why}."
    return f"{said}."


def sweep(frames: dict[str, pd.DataFrame], base: pd.DataFrame, rounds: int) -> Sweep:
    """Part 3's findings from run_parts' frames ("sweep" and `rounds` − 1 rounds of its ends, runs.sweep_rounds)."""
    rows = frames["sweep"]
    overhead = float(base.loc[rows["pattern"].unique(), "cpu_ms"].max())
    return Sweep(rows, overhead, runs.edge_rounds(frames, rounds), tuple(runs.ratio_rounds(frames, rounds)))


def measured(slow: pd.DataFrame, frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Every run the lesson made, in one frame: part 1's (`slow`), and each of run_parts' `frames` (parts 2 and 3,
    the pinned server's, and the extra rounds that claims 4 and 5 read)."""
    return pd.concat([slow, *frames.values()], ignore_index=True)
