"""What `uvicorn --workers` added, read from lesson 04's runs: the ratios its titles and claims quote.

The runs carry a `workload` column, "CPU-bound" or "I/O-bound"; each figure is a mean over a
worker count's rounds, and the CPU each request cost (theory.cores) puts two counts' req/s
side by side at equal CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from labserver.theory import cores as core_model


@dataclass(frozen=True)
class Findings:
    """Lesson 04's figures: CPU-bound gains up to the cores and past them, and how flat I/O-bound stays."""

    cpu: pd.DataFrame  # the CPU-bound runs
    io: pd.DataFrame  # the I/O-bound runs
    at_cores: int  # the most workers that still get a core each
    beyond: int | None  # the first count that does not; None where every count does
    gain: float  # CPU-bound: `at_cores` workers' req/s over one worker's
    # one worker's CPU per request over `at_cores` workers': below 1 where a core computes slower with the others busy
    speed: float
    # CPU-bound: `beyond` workers' req/s over `at_cores` workers', and `at_cores` workers' CPU per request over
    # `beyond` workers' (as `speed`); None unless `at_cores` is every usable core and a count went past them
    past: float | None
    past_speed: float | None
    io_rps: pd.Series  # I/O-bound req/s, by workers
    io_vs_model: float  # I/O-bound: the smallest measured / predicted before the run
    kept_busy: float  # CPU-bound: the smallest share of the cores left to them (after Locust and the rest) kept busy
    io_one: pd.Series  # the I/O-bound run of one worker
    io_loop_busy: float  # ... the share of its core its event loop kept busy
    io_ceiling: float  # ... and the req/s at which that loop would run out of CPU (cores.ceiling_rps)

    @property
    def past_at_equal_cpu(self) -> float | None:
        """`past` at the CPU per request measured: over `past_speed` (None where `past` is)."""
        return None if self.past is None or self.past_speed is None else self.past / self.past_speed

    @property
    def io_spread(self) -> float:
        """I/O-bound: the fastest worker count's req/s over the slowest's."""
        return float(self.io_rps.max() / self.io_rps.min())


def findings(runs: pd.DataFrame, workers: list[int], cores: float) -> Findings:
    """Read lesson 04's runs at the worker counts `workers` (they hold 1) on a machine of `cores` usable cores."""
    cpu = runs[runs["workload"] == "CPU-bound"].reset_index(drop=True)
    io = runs[runs["workload"] == "I/O-bound"].reset_index(drop=True)
    cpu_rps = cpu.groupby("workers")["rps"].mean()
    at_cores, beyond = core_model.around(workers, int(cores))  # whole workers: the same counts as `cores`
    measured_past = beyond is not None and at_cores == cores
    one = io.index[io["workers"] == 1][0]
    return Findings(
        cpu=cpu,
        io=io,
        at_cores=at_cores,
        beyond=beyond,
        gain=float(cpu_rps[at_cores] / cpu_rps[1]),
        speed=core_model.cost_ratio(cpu, "workers", 1, at_cores),
        past=float(cpu_rps[beyond] / cpu_rps[at_cores]) if measured_past else None,
        past_speed=core_model.cost_ratio(cpu, "workers", at_cores, beyond) if measured_past else None,
        io_rps=io.set_index("workers")["rps"],
        io_vs_model=float(io["ratio_before"].min()),
        kept_busy=float(core_model.share_of_left(runs, by="workload", how="min")["CPU-bound"]),
        io_one=io.loc[one],
        io_loop_busy=float(core_model.share_busy(io, by="workers")[1]),
        io_ceiling=float(core_model.ceiling_rps(io).loc[one]),
    )
