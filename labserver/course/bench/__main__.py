"""`python -m labserver.course.bench`: measure the parts not skipped, write data/bench/latest.json, print the table."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime

from labserver import config
from labserver.course import bench
from labserver.course.bench import harness, layer, live_view, overhead, repeatability, scaleout, telemetry
from labserver.course.bench.batch import batch
from labserver.course.bench.report import TARGETS, plain, table, targets
from labserver.harness.rows import results
from labserver.paths import data_dir


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    batch_root = data_dir()  # the batch writes where `make figures` would
    out_dir = batch_root / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    batch_env = dict(os.environ)
    os.environ[config.DATA_DIR.name] = config.DATA_DIR.text(out_dir)  # the bench's own runs: data/bench/runs/
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    report: dict = {"date": stamp, "environment": results.environment(), "targets": TARGETS}
    started = time.perf_counter()
    _measure(report, args, set(bench.PARTS) - set(args.skip))
    if "batch" not in args.skip:
        print(f"Batch: python -m labserver.course.batch --profile {args.profile} …", flush=True)
        report["batch"] = batch(args.profile, batch_env, out_dir / f"batch-{stamp}.log", batch_root)
    report["bench_s"] = time.perf_counter() - started
    report["targets_met"] = [{"what": w, "measured": v, "target": t, "met": m} for w, v, t, m in targets(report)]
    text = json.dumps(plain(report), indent=2, default=str)
    (out_dir / f"bench-{stamp}.json").write_text(text)
    (out_dir / "latest.json").write_text(text)
    print("\n" + table(report))
    print(f"\nWritten: {out_dir / 'latest.json'} (and bench-{stamp}.json), {report['bench_s']:.0f} s")
    return 0


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m labserver.course.bench", description=bench.__doc__.splitlines()[0])
    parser.add_argument("--skip", nargs="*", default=[], choices=bench.PARTS, help="parts not to measure this time")
    parser.add_argument("--duration-s", type=int, default=5, help="length of each load run (the lessons' quick value)")
    parser.add_argument("--profile", default="quick", help="batch profile to time (default: quick)")
    return parser.parse_args(argv)


def _measure(report: dict, args: argparse.Namespace, parts: set[str]) -> None:
    """The load parts, in order, into `report`; the overhead medians from every run they made."""
    ready: list[float] = []  # every server's start, for the overhead medians
    runs: list[dict] = []  # every bench run, for the overhead medians
    if "harness" in parts:
        print("Harness fidelity: /sequential, 100 ms I/O", flush=True)
        report["harness"], report["alone"] = harness.harness(args.duration_s, ready)
        runs += report["harness"]
    if "repeatability" in parts:
        report["repeatability"] = repeatability.repeatability(args.duration_s, ready, runs)
    if "live" in parts:
        print("Live view: the busy run with it off and on, in mirrored rounds", flush=True)
        report["live"] = live_view.live_view(args.duration_s, ready)
    if "telemetry" in parts:
        print("Telemetry: the same plan on a server that samples and one that does not", flush=True)
        report["telemetry"] = telemetry.telemetry_cost(args.duration_s, ready)
    if "layer" in parts:
        print("ASGI layer: the example's routes that compute, with the lab's layer and without it", flush=True)
        report["layer"] = layer.layer_cost(args.duration_s, ready)
    if "scaleout" in parts:
        print("Scale-out: two Locust workers that join a master, beside two forked here", flush=True)
        report["scaleout"] = scaleout.scaleout(args.duration_s)
    if "overhead" in parts:
        report["overhead_s"] = overhead.overhead(ready, runs)


if __name__ == "__main__":
    sys.exit(main())
