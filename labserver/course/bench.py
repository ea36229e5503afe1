"""`python -m labserver.course.bench` (`make bench`): does the lab measure the server, not itself, and at what cost?

One run measures everything and writes data/bench/latest.json plus a dated copy:

- harness: the ideal async endpoint (`/sequential`, one 100 ms await) at 50, 100, 200 and 400
  users, with one Locust process and with `--processes 2`: measured beside predicted (Little's
  law, and the curve with the server's own measured CPU per request), with the CPU of Locust,
  of the server and of everything else on the machine during the measurement window.
- alone: one user, the same endpoint: the share of Little's law a closed loop gets with no queue at
  all, the request's round trip and the machine's timer wake-up on top of the 100 ms. A loaded run
  near it lost nothing to the harness (it may even pass it: busy processes wake up faster).
- overhead_s: median time from asking for a server to /health answering, from starting Locust
  to its first request, and per run outside its measurement window.
- batch: wall time of `python -m labserver.course.batch` (quick profile) and the part of it spent
  inside measurement windows.
- repeatability: lesson 01's headline ratio measured three times, and its spread.
- telemetry: the server's own sampling (every 100 ms per worker) must not move the measurement:
  one short plan on a server that samples and one that does not, taking turns, measured / predicted
  of each run side by side.
- live: what a notebook's live view costs: one short plan measured with the view off, then
  on (drawn as in a notebook, not shown), its measured / predicted beside each other, and the
  CPU each frame took to draw. `--skip harness overhead batch repeatability` measures it alone.
- scaleout: Locust's workers joining a master (`python -m labserver worker`) against a server
  started with `python -m labserver serve`, beside two Locust processes forked here, on the same
  server, taking turns in mirrored order: measured / predicted of each, from 200 to 2,000 req/s.

The bench's own runs land in data/bench/runs/, away from the lessons' (lesson 99 reads those).
On a shared machine run it alone (`flock /tmp/lab-measure.lock make bench`): before each run it
waits until other programs are quiet, measures a run again if they were not, and reports the
cores they took meanwhile (`other_cpu`), so that a figure taken on a busy machine shows it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from labserver.course import fidelity
from labserver.harness import records, results
from labserver.harness.launcher import LabServer, running
from labserver.harness.load import run_load, run_plan
from labserver.harness.meters import wait_until_quiet
from labserver.harness.plan import mirrored
from labserver.paths import ROOT, data_dir
from labserver.theory import model

PARTS = ("harness", "overhead", "batch", "repeatability", "live", "telemetry", "scaleout")
USERS = (50, 100, 200, 400)
IO_MS = 100
TARGETS = {
    "ratio": 0.98,
    "ratio_up_to_rps": 2000,
    "overhead_s": 2.0,
    "batch_s": 360,
    "measuring": 0.70,
    "spread": 0.05,
    "frame_ms": 50,  # median CPU to draw a live frame: one a second, at most 5% of a core
    "scaleout_shift": 0.01,  # measured / predicted with joined workers, against forked ones: within 1%
}
HARNESS_COLUMNS = [
    "users",
    "processes",
    "predicted_rps",
    "measured_rps",
    "locust_rps",
    "ratio",
    "predicted_cpu_rps",
    "ratio_cpu",
    "locust_cpu",
    "server_cpu",
    "other_cpu",
    "machine_cpu",
    "server_ms",
    "locust_ms",
    "server_ms_model",
    "p50_ms",
    "mean_ms",
    "window_s",
    "run_s",
    "locust_first_request_s",
    "attempts",
    "waited_s",
    "valid",
    "problems",
]
# On a shared machine: wait for others' work to stop before a run, and measure again a run during
# which other programs still kept more than this many cores busy.
OTHER_CPU_MAX = 0.25
ATTEMPTS = 3
QUIET_WAIT_S = 60.0
REPEAT_USERS = 80  # lesson 01's claim: at 2× the 40-thread pool, async serves ≥ 2× the requests of `def`
# the telemetry part's plan: the event loop at its busiest in the lab, and a full thread pool with a queue
TELEMETRY_PLAN = (("sequential", 200), ("threadpool", 80))
LIVE_USERS = (50, 400)  # the live view's plan: a light run and a busy one (about 4,000 req/s offered)
SCALEOUT_USERS = (20, 50, 100, 200)  # at 100 ms of I/O: 200 to 2,000 req/s


def spread(values: list[float]) -> float:
    """(largest − smallest) / median: 0.05 means the values lie within 5% of their middle."""
    return (max(values) - min(values)) / statistics.median(values) if values else float("nan")


def first_request_delay(per_user: list[list], spawned_at: float) -> float:
    """Seconds from starting Locust (`spawned_at`) to the first request it sent (a reply's end minus its latency)."""
    sent = [r.sent for user in per_user for r in user]
    return min(sent) - spawned_at if sent else float("nan")


def locust_rps(path: Path) -> float:
    """Locust's own throughput from its --json-file: requests over first-to-last reply, warm-up included."""
    try:
        stats = json.loads(path.read_text())[0]
    except (OSError, ValueError, IndexError):
        return float("nan")
    span = stats["last_request_timestamp"] - stats["start_time"]
    return (stats["num_requests"] - 1) / span if span > 0 else float("nan")


def windows(runs: pd.DataFrame, t0: float, t1: float) -> pd.DataFrame:
    """Per lesson, the runs started between t0 and t1 (epoch s): how many, and their seconds inside measurement windows.

    A Locust run's window is `window_s` (after the warm-up); a client run (lesson 06) has no
    warm-up and is measured for its whole `wall_s`.
    """
    if runs.empty or "started_at" not in runs:
        return pd.DataFrame({"runs": [], "measuring_s": []}, index=pd.Index([], name="lesson"))
    started = pd.to_datetime(runs["started_at"], utc=True, errors="coerce").map(lambda t: t.timestamp())
    mine = runs[(started >= int(t0)) & (started <= t1)]  # started_at is rounded down to the second
    window = mine["window_s"] if "window_s" in mine else pd.Series(float("nan"), index=mine.index)
    if "wall_s" in mine:
        window = window.fillna(mine["wall_s"])
    lesson = mine["lesson"].fillna("(none)") if "lesson" in mine else pd.Series("(none)", index=mine.index)
    frame = pd.DataFrame({"lesson": lesson, "measuring_s": window.fillna(0.0)})
    return frame.groupby("lesson").agg(runs=("measuring_s", "size"), measuring_s=("measuring_s", "sum"))


def measuring_s(runs: pd.DataFrame, t0: float, t1: float) -> tuple[float, int]:
    """Seconds inside measurement windows, and how many runs, of the runs started between t0 and t1."""
    per_lesson = windows(runs, t0, t1)
    return float(per_lesson["measuring_s"].sum()), int(per_lesson["runs"].sum())


def lesson_walls(executed: Path, since: float) -> dict[str, float]:
    """Wall time (s) of each lesson papermill executed into `executed` since `since` (epoch s)."""
    walls = {}
    for path in sorted(executed.glob("*.ipynb")):
        if path.stat().st_mtime < since:
            continue
        try:
            walls[path.stem] = float(json.loads(path.read_text())["metadata"]["papermill"]["duration"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return walls


def targets(report: dict) -> list[tuple[str, float, str, bool]]:
    """Each of the bench's targets as (what, measured, target, met), for the parts that were measured."""
    out = []
    if report.get("harness"):
        near = [r for r in report["harness"] if r["predicted_rps"] <= TARGETS["ratio_up_to_rps"]]
        worst = min(r["ratio"] for r in near)
        out.append(
            (
                f"worst measured/predicted, runs ≤ {TARGETS['ratio_up_to_rps']:,} req/s",
                worst,
                f"≥ {TARGETS['ratio']}",
                worst >= TARGETS["ratio"],
            )
        )
    for name, value in (report.get("overhead_s") or {}).items():
        out.append(
            (
                f"overhead: {name.replace('_', ' ')} (s)",
                value,
                f"≤ {TARGETS['overhead_s']}",
                value <= TARGETS["overhead_s"],
            )
        )
    if report.get("batch"):
        b = report["batch"]
        out.append(
            ("batch (quick) wall time (s)", b["wall_s"], f"≤ {TARGETS['batch_s']}", b["wall_s"] <= TARGETS["batch_s"])
        )
        share = b["measuring_s"] / b["wall_s"] if b["wall_s"] else float("nan")
        out.append(
            (
                "batch: share inside measurement windows",
                share,
                f"≥ {TARGETS['measuring']}",
                share >= TARGETS["measuring"],
            )
        )
    if report.get("repeatability"):
        s = report["repeatability"]["spread"]
        out.append(("repeatability: spread of the headline ratio", s, f"≤ {TARGETS['spread']}", s <= TARGETS["spread"]))
    if report.get("scaleout"):
        shift = report["scaleout"]["largest_shift"]
        out.append(
            (
                "scale-out: largest joined − forked measured/predicted",
                shift,
                f"within ±{TARGETS['scaleout_shift']}",
                abs(shift) <= TARGETS["scaleout_shift"],
            )
        )
    if report.get("live"):
        ms = report["live"]["frame_ms"]
        out.append(("live view: median CPU per frame (ms)", ms, f"≤ {TARGETS['frame_ms']}", ms <= TARGETS["frame_ms"]))
    return out


def table(report: dict) -> str:
    """The report as a few lines of text: harness runs, then the targets."""
    lines = []
    if report.get("harness"):
        lines.append(
            "procs users predicted measured ratio  with-CPU ratio  server(ms/req) locust(ms/req) "
            "cores: server locust other  valid"
        )
        for r in report["harness"]:
            lines.append(
                f"{r['processes']:5d} {r['users']:5d} {r['predicted_rps']:9.0f} {r['measured_rps']:8.0f} "
                f"{r['ratio']:5.3f} {r['predicted_cpu_rps']:9.0f} {r['ratio_cpu']:5.3f} "
                f"{r['server_ms']:14.3f} {r['locust_ms']:14.3f} {r['server_cpu']:13.2f} "
                f"{r['locust_cpu']:6.2f} {r['other_cpu']:5.2f}  {'yes' if r['valid'] else 'NO'}"
            )
        if report.get("alone"):
            a = report["alone"]
            lines.append(
                f"one user alone: {a['rps']:.2f} req/s, mean {a['mean_ms']:.1f} ms: {a['ratio']:.3f} of Little's law "
                "with no queue at all"
            )
        lines.append("")
    for lesson in (report.get("batch") or {}).get("lessons", []):
        share = lesson["measuring_s"] / lesson["wall_s"] if lesson["wall_s"] else float("nan")
        lines.append(
            f"batch  {lesson['lesson']:<26} {lesson['wall_s']:6.1f} s, {lesson['runs']:3d} runs, "
            f"{lesson['measuring_s']:6.1f} s measuring ({share:.0%})"
        )
    if (report.get("batch") or {}).get("lessons"):
        lines.append("")
    for f in (report.get("batch") or {}).get("fidelity", []):
        lines.append(
            f"model  {f['lesson']:<3} {f['runs']:3d} valid runs, {f['within_10']:4.0%} within ±10%, "
            f"I/O {f['io_within_3']:4.0%} within ±3%; worst {f['worst_ratio']:.3f}: {f['worst_run']}"
        )
    if report.get("live"):
        v = report["live"]
        for mode in ("off", "on"):
            ratios = " ".join(f"{r:.3f}" for r in v[f"{mode}_ratios"])
            lines.append(
                f"live view {mode:<3}  measured/predicted {ratios}  Locust {v[f'{mode}_locust_ms']:.3f} ms/req"
                f"  other CPU {v[f'{mode}_other_cpu']:.2f}"
            )
        frames = f"median {v['frame_ms']:.1f} ms, max {v['frame_ms_max']:.1f} ms"
        lines.append(f"live view: {v['frames']} frames, CPU to draw one: {frames}")
        lines.append("")
    if report.get("telemetry"):
        t = report["telemetry"]
        for mode in ("on", "off"):
            ratios = " ".join(f"{r:.3f}" for r in t[f"{mode}_ratios"])
            lines.append(f"telemetry {mode:<3}  measured/predicted {ratios}  (runs: {', '.join(t['runs'])})")
        lines.append(f"telemetry: largest difference on − off, same run: {t['largest_shift']:+.3f}")
        lines.append("")
    if report.get("scaleout"):
        lines.append("scale-out  users predicted  forked: measured ratio  joined: measured ratio  joined − forked")
        for r in report["scaleout"]["runs"]:
            lines.append(
                f"           {r['users']:5d} {r['predicted_rps']:9.0f} {r['forked_rps']:16.0f} {r['forked_ratio']:5.3f}"
                f" {r['joined_rps']:16.0f} {r['joined_ratio']:5.3f} {r['shift']:+15.4f}"
            )
        lines.append("")
    for what, value, target, met in targets(report):
        lines.append(f"{'MET ' if met else 'MISS'}  {what:<52} {value:8.3f}  (target {target})")
    return "\n".join(lines)


def _plain(value):
    """`value` with NaN turned into None, so that latest.json is strict JSON."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars from pandas: plain Python numbers
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def _measured_run(server: LabServer, pattern: str, users: int, duration_s: int, **load) -> dict:
    """One run_load; the run's row (machine and other CPU included) plus what the bench adds."""
    spawned_at, started = time.time(), time.perf_counter()
    result = run_load(server, pattern, users, duration_s=duration_s, lesson="bench", progress=False, **load)
    row = dict(result.row)
    row["run_s"] = time.perf_counter() - started
    row["locust_first_request_s"] = first_request_delay(records.read(result.path), spawned_at)
    row["locust_rps"] = locust_rps(result.path / "locust.json")
    return row


def _quiet_run(server: LabServer, pattern: str, users: int, duration_s: int, **load) -> dict:
    """`_measured_run` once the machine is quiet, again (up to ATTEMPTS) if other programs still took CPU meanwhile."""
    tries = []
    for _ in range(ATTEMPTS):
        waited = wait_until_quiet(OTHER_CPU_MAX, timeout_s=QUIET_WAIT_S)
        tries.append({**_measured_run(server, pattern, users, duration_s, **load), "waited_s": waited})
        if tries[-1]["other_cpu"] <= OTHER_CPU_MAX:  # NaN is not quiet either
            break
    best = min(tries, key=lambda r: r["other_cpu"] if r["other_cpu"] == r["other_cpu"] else math.inf)
    return {**best, "attempts": len(tries)}


def harness(duration_s: int, ready: list[float]) -> tuple[list[dict], dict]:
    """One user alone, then the ideal async endpoint at each of USERS, with one and two Locust processes; one server."""
    rows = []
    with LabServer() as server:
        ready.append(server.ready_s)
        one = _quiet_run(server, "sequential", 1, duration_s, io_ms=IO_MS)
        alone = {
            "rps": one["rps"],
            "mean_ms": one["mean_ms"],
            "p50_ms": one["p50_ms"],
            "ratio": one["ratio"],
            "what": f"one user alone, {IO_MS} ms I/O: measured / Little's law with no queue at all",
        }
        print(f"  harness: 1 user alone: {one['rps']:.2f} req/s, {one['ratio']:.3f} of Little's law", flush=True)
        for processes in (1, 2):
            for users in USERS:
                rows.append(_quiet_run(server, "sequential", users, duration_s, io_ms=IO_MS, processes=processes))
                print(
                    f"  harness: {processes} Locust process(es), {users} users: {rows[-1]['rps']:.0f} req/s", flush=True
                )
    # The server's own CPU per request, measured in its busiest run: the second prediction.
    frame = pd.DataFrame(rows)
    server_ms = model.server_cpu_ms(frame)
    curve = model.with_server_cpu(frame, server_ms)
    out = frame.assign(
        measured_rps=frame["rps"],
        predicted_cpu_rps=curve["predicted_rps"],
        ratio_cpu=curve["ratio"],
        server_ms=frame["server_cpu"] / frame["rps"] * 1000,
        locust_ms=frame["locust_cpu"] / frame["rps"] * 1000,
        server_ms_model=server_ms,
        valid=frame["valid"].astype(bool),
    )
    return out[HARNESS_COLUMNS].to_dict("records"), alone


def repeatability(duration_s: int, ready: list[float], runs: list[dict]) -> dict:
    """Lesson 01's headline, async / sync throughput at REPEAT_USERS users, three times on one server."""
    values = []
    with LabServer() as server:
        ready.append(server.ready_s)
        for _ in range(3):
            pair = {
                p: _quiet_run(server, p, REPEAT_USERS, duration_s, io_ms=IO_MS) for p in ("sequential", "threadpool")
            }
            runs += pair.values()
            values.append(pair["sequential"]["rps"] / pair["threadpool"]["rps"])
            print(f"  repeatability: {values[-1]:.3f}", flush=True)
    return {
        "what": f"lesson 01: async / sync throughput at {REPEAT_USERS} users, {IO_MS} ms I/O (claim ≥ 2)",
        "values": values,
        "spread": spread(values),
    }


def live_view(duration_s: int, ready: list[float]) -> dict:
    """One short plan with the live view off, then on: measured / predicted of each run, and each frame's CPU.

    The view draws every frame as in a notebook (charts/live.py), without showing it; Locust
    streams its records for it (--live-file). The figures are the runs' own: Locust's CPU per
    request and the other programs' CPU (the view's drawing counts there) beside the ratios.
    """
    from labserver.charts import live  # the course may draw; imported only when this part runs

    plan = [{"pattern": "sequential", "users": u, "io_ms": IO_MS} for u in LIVE_USERS]
    view = live.View(show=False)
    out: dict = {"what": f"/sequential, {IO_MS} ms I/O, users {list(LIVE_USERS)}, {duration_s} s each"}
    with LabServer() as server:
        ready.append(server.ready_s)
        for mode, watch in (("off", None), ("on", view)):
            wait_until_quiet(OTHER_CPU_MAX, timeout_s=QUIET_WAIT_S)
            done = run_plan(server, plan, duration_s=duration_s, lesson="bench", progress=False, watch=watch)
            rows = [r.row for r in done]
            out[f"{mode}_ratios"] = [r["ratio"] for r in rows]
            out[f"{mode}_locust_ms"] = statistics.mean(r["locust_ms"] for r in rows)
            out[f"{mode}_other_cpu"] = statistics.mean(r["other_cpu"] for r in rows)
            out[f"{mode}_valid"] = all(bool(r["valid"]) for r in rows)
            print(f"  live view {mode}: measured/predicted {', '.join(f'{x:.3f}' for x in out[f'{mode}_ratios'])}")
    frames = [s * 1000 for s in view.render_s[1:]]  # the first frame draws everything once, fonts included
    out |= {
        "frames": len(view.render_s),
        "frame_ms": statistics.median(frames) if frames else math.nan,
        "frame_ms_max": max(frames, default=math.nan),
        "first_frame_ms": view.render_s[0] * 1000 if view.render_s else math.nan,
    }
    return out


def telemetry_cost(duration_s: int, ready: list[float]) -> dict:
    """TELEMETRY_PLAN on a server that samples its telemetry and on one that does not: measured / predicted of each run.

    Both servers run at once and take turns in one Locust plan, in mirrored order (on, off, …,
    off, on), so that the machine's drift falls on both alike; each ratio is the mean of its two.
    """
    with running([LabServer(), LabServer(telemetry=False)]) as (on, off):
        ready += [on.ready_s, off.ready_s]
        turns = [(mode, server, p, u) for p, u in TELEMETRY_PLAN for mode, server in (("on", on), ("off", off))]
        plan = [
            {"pattern": p, "users": u, "io_ms": IO_MS, "server": server, "tags": {"telemetry": mode}}
            for _, (mode, server, p, u) in mirrored(turns, 2)
        ]
        wait_until_quiet(OTHER_CPU_MAX, timeout_s=QUIET_WAIT_S)
        rows = [r.row for r in run_plan(on, plan, duration_s=duration_s, lesson="bench", progress=False)]
    frame = pd.DataFrame(rows).groupby(["pattern", "users", "telemetry"], sort=False)["ratio"].mean()
    runs = [f"{p} × {u}" for p, u in TELEMETRY_PLAN]
    out = {
        "what": f"{', '.join(runs)} users, {IO_MS} ms I/O, {duration_s} s each, twice, telemetry on and off",
        "runs": runs,
        "on_ratios": [float(frame[p, u, "on"]) for p, u in TELEMETRY_PLAN],
        "off_ratios": [float(frame[p, u, "off"]) for p, u in TELEMETRY_PLAN],
        "valid": all(bool(r["valid"]) for r in rows),
    }
    shifts = [a - b for a, b in zip(out["on_ratios"], out["off_ratios"], strict=True)]
    out["largest_shift"] = max(shifts, key=abs)
    for mode in ("on", "off"):
        print(f"  telemetry {mode}: measured/predicted {', '.join(f'{x:.3f}' for x in out[f'{mode}_ratios'])}")
    return out


def scaleout(duration_s: int, rounds: int = 2) -> dict:
    """Two Locust workers that join a master against two forked here, on one `python -m labserver serve`.

    The same server, the same users, taking turns in mirrored order (forked, joined, joined,
    forked, …) so that the machine's drift falls on both alike; each figure is the mean of its
    rounds. The workers are `python -m labserver worker` processes on this machine, joining over
    127.0.0.1 as a classroom's laptops would over their network, and rejoining for every run.
    """
    from labserver.harness import procs
    from labserver.harness.remote import RemoteServer

    port, master_port = procs.free_port(), procs.free_port()
    master = f"127.0.0.1:{master_port}"
    log = data_dir() / "scaleout-serve.log"  # data/bench/ while the bench runs
    serve = [sys.executable, "-m", "labserver", "serve", "--port", str(port), "--procs", "0"]
    worker = [sys.executable, "-m", "labserver", "worker", "--master", master]
    started = []
    try:
        procs.spawn(serve, log, cwd=ROOT, on_start=started.append)
        for i in range(2):
            procs.spawn(worker, log.with_name(f"scaleout-worker{i}.log"), cwd=ROOT, on_start=started.append)
        server = _attach(RemoteServer, f"http://127.0.0.1:{port}", started[0], log)
        rows = []
        for _, (mode, users) in mirrored([(m, u) for u in SCALEOUT_USERS for m in ("forked", "joined")], rounds):
            wait_until_quiet(OTHER_CPU_MAX, timeout_s=QUIET_WAIT_S)
            joined = {"master": master, "join_timeout_s": 60} if mode == "joined" else {}
            run = {"pattern": "sequential", "users": users, "io_ms": IO_MS}
            (done,) = run_plan(server, [run], duration_s, processes=2, lesson="bench", progress=False, **joined)
            rows.append({**done.row, "mode": mode})
            print(f"  {mode} {users} users: {done.row['rps']:.0f} req/s, measured/predicted {done.row['ratio']:.3f}")
    finally:
        for proc in reversed(started):
            procs.stop_tree(proc, grace_s=3)
    frame = pd.DataFrame(rows).groupby(["users", "mode"])[["rps", "ratio", "predicted_rps"]].mean()
    out_rows = []
    for users in SCALEOUT_USERS:
        f, j = frame.loc[(users, "forked")], frame.loc[(users, "joined")]
        out_rows.append(
            {
                "users": users,
                "predicted_rps": float(j["predicted_rps"]),
                "forked_rps": float(f["rps"]),
                "forked_ratio": float(f["ratio"]),
                "joined_rps": float(j["rps"]),
                "joined_ratio": float(j["ratio"]),
                "shift": float(j["ratio"] - f["ratio"]),
            }
        )
    return {
        "what": f"/sequential, {IO_MS} ms I/O, users {list(SCALEOUT_USERS)}, {duration_s} s each, {rounds} rounds",
        "runs": out_rows,
        "largest_shift": max((r["shift"] for r in out_rows), key=abs),
        "valid": all(bool(r["valid"]) for r in rows),
    }


def _attach(remote, url: str, serve: subprocess.Popen, log: Path, timeout_s: float = 60.0):
    """The server `serve` starts, attached once it answers; RuntimeError with its log if it never does."""
    from labserver.harness import procs
    from labserver.harness.launcher import ServerError

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return remote(url)
        except ServerError:
            if serve.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"`python -m labserver serve` did not answer at {url}:\n{procs.tail(log)}") from None
            time.sleep(0.2)


def overhead(ready: list[float], runs: list[dict]) -> dict:
    """Medians of: server start to /health, Locust start to its first request, a run outside its window."""
    for _ in range(3):  # a few bare starts, so that the median is not one server's luck
        with LabServer() as server:
            ready.append(server.ready_s)

    def median(values) -> float:
        values = list(values)
        return statistics.median(values) if values else float("nan")

    return {
        "server_ready": median(ready),
        "locust_first_request": median(r["locust_first_request_s"] for r in runs),
        "per_run": median(r["run_s"] - r["window_s"] for r in runs),
    }


def batch(profile: str, env: dict, log: Path) -> dict:
    """The batch as `make figures` runs it (`-m labserver.course.batch`), timed; runs read back from disk."""
    started, t0 = time.perf_counter(), time.time()
    with open(log, "w") as out:
        code = subprocess.call(
            [sys.executable, "-m", "labserver.course.batch", "--profile", profile],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    wall_s, t1 = time.perf_counter() - started, time.time()
    root = Path(env.get("LAB_DATA_DIR") or ROOT / "data")
    made = results.load_runs(root=root / "runs")
    per_lesson = windows(made, t0, t1)
    explained = fidelity.table(made[pd.to_datetime(made["started_at"]).map(lambda t: t0 <= t.timestamp() <= t1)])
    walls = lesson_walls(root / "executed", t0)
    lessons = [
        {
            "lesson": name,
            "wall_s": wall,
            "runs": int(per_lesson["runs"].get(name, 0)),
            "measuring_s": float(per_lesson["measuring_s"].get(name, 0.0)),
        }
        for name, wall in walls.items()
    ]
    return {
        "profile": profile,
        "wall_s": wall_s,
        "measuring_s": float(per_lesson["measuring_s"].sum()),
        "runs": int(per_lesson["runs"].sum()),
        "exit_code": code,
        "lessons": lessons,
        "fidelity": explained.to_dict("records"),  # share of valid runs within ±10% of their prediction
        "log": str(log),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labserver.course.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--skip", nargs="*", default=[], choices=PARTS, help="parts not to measure this time")
    parser.add_argument("--duration-s", type=int, default=5, help="length of each load run (the lessons' quick value)")
    parser.add_argument("--profile", default="quick", help="batch profile to time (default: quick)")
    args = parser.parse_args(argv)

    out_dir = data_dir() / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    batch_env = dict(os.environ)  # the batch writes where `make figures` would
    os.environ["LAB_DATA_DIR"] = str(out_dir)  # the bench's own runs: data/bench/runs/
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    report: dict = {"date": stamp, "environment": results.environment(), "targets": TARGETS}
    ready: list[float] = []
    started = time.perf_counter()
    runs: list[dict] = []  # every bench run, for the overhead medians
    if "harness" not in args.skip:
        print("Harness fidelity: /sequential, 100 ms I/O", flush=True)
        report["harness"], report["alone"] = harness(args.duration_s, ready)
        runs += report["harness"]
    if "repeatability" not in args.skip:
        report["repeatability"] = repeatability(args.duration_s, ready, runs)
    if "live" not in args.skip:
        print("Live view: the same plan with it off and on", flush=True)
        report["live"] = live_view(args.duration_s, ready)
    if "telemetry" not in args.skip:
        print("Telemetry: the same plan on a server that samples and one that does not", flush=True)
        report["telemetry"] = telemetry_cost(args.duration_s, ready)
    if "scaleout" not in args.skip:
        print("Scale-out: two Locust workers that join a master, beside two forked here", flush=True)
        report["scaleout"] = scaleout(args.duration_s)
    if "overhead" not in args.skip:
        report["overhead_s"] = overhead(ready, runs)
    if "batch" not in args.skip:
        print(f"Batch: python -m labserver.course.batch --profile {args.profile} …", flush=True)
        report["batch"] = batch(args.profile, batch_env, out_dir / f"batch-{stamp}.log")
    report["bench_s"] = time.perf_counter() - started
    report["targets_met"] = [{"what": w, "measured": v, "target": t, "met": m} for w, v, t, m in targets(report)]
    text = json.dumps(_plain(report), indent=2, default=str)
    (out_dir / f"bench-{stamp}.json").write_text(text)
    (out_dir / "latest.json").write_text(text)
    print("\n" + table(report))
    print(f"\nWritten: {out_dir / 'latest.json'} (and bench-{stamp}.json), {report['bench_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
