"""`python -m labserver measure APP ROUTE [ROUTE ...]`: the command, its options, its report and its exit code.

Everything a user typed is checked before anything starts; a route that answers with an error
when it is priced stops the command with that error, the app's log shown and nothing left running.
Exit codes: 0, the routes measured; 1, a route under its `--at-least`; 2, bad input or an app that
would not start or answer.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from labserver.demo.settings import THREADS_DEFAULT, Settings
from labserver.paths import data_dir
from labserver.theory.workload import DURATION_MAX_S, USERS_MAX

USAGE_EXAMPLE = 'python -m labserver measure examples.shop:app "GET /items" "GET /report" "GET /catalog" --users 32'


def add_parser(sub: Any) -> argparse.ArgumentParser:
    measure = sub.add_parser(
        "measure",
        help="predict and measure each route of your own FastAPI app",
        description=(
            "Start APP the lab's way, price each ROUTE at one user, predict its ceiling and name what binds it "
            "before any load, then check the prediction with a sweep of closed-loop Locust users on 127.0.0.1. "
            f"Example: {USAGE_EXAMPLE}"
        ),
    )
    measure.add_argument("app", help="the ASGI app as uvicorn takes it, module:attribute (main:app), from this folder")
    measure.add_argument(
        "routes", nargs="+", metavar="ROUTE", help='"GET /items?limit=20", or "POST /orders @order.json" (its body)'
    )
    measure.add_argument("--header", action="append", default=[], help='"Name: value", sent with every request')
    measure.add_argument("--env", action="append", default=[], help="NAME=value in the app's environment")
    measure.add_argument("--workers", type=int, default=1, help="uvicorn worker processes (default: 1)")
    measure.add_argument(
        "--threads",
        type=int,
        default=None,
        help="set the thread limit per worker once the app has started (default: the app's own, AnyIO's 40 unless "
        "its lifespan sets another)",
    )
    measure.add_argument("--users", type=int, default=64, help="the sweep's most closed-loop users (default: 64)")
    measure.add_argument("--duration-s", type=int, default=5, help="each run's length, in s (default: 5)")
    measure.add_argument(
        "--at-least",
        action="append",
        default=[],
        metavar='"METHOD /path=REQ_PER_S"',
        help="exit 1 when that route's predicted or measured ceiling is below REQ_PER_S",
    )
    measure.add_argument("--predict-only", action="store_true", help="price and predict, without the sweep")
    measure.add_argument(
        "--mix",
        default=None,
        metavar='"METHOD /path=WEIGHT,..."',
        help="also price a mix of the routes (each one's share of the requests) by the operational laws, U = X × D: "
        "each resource's demand and use, and the bottleneck, before any load",
    )
    measure.add_argument("--json", action="store_true", help="print the verdicts as JSON, for scripts")
    measure.add_argument(
        "--out",
        default=None,
        help="folder for the verdicts' JSON, saved even when the command stops early (default: the lab's "
        "data/measure/, or $LAB_DATA_DIR/measure/); each run's own folder is under data/runs/",
    )
    return measure


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The command: checked input, then the app started, priced, predicted and swept; the report; the exit code."""
    from labserver.yourapp import routes as parse  # late: `--help` pays for nothing

    folder = Path.cwd()
    try:
        sent = parse.headers(args.header)
        routes = [parse.parse(text, sent, folder) for text in args.routes]
        env = parse.env(args.env)
        floors = parse.at_least(args.at_least, [r["label"] for r in routes])
        shares = parse.mix(args.mix, [r["label"] for r in routes])
        Settings(
            workers=args.workers, threads=THREADS_DEFAULT if args.threads is None else args.threads, procs=0
        ).check()
        _check_range("--users", args.users, 1, USERS_MAX)
        _check_range("--duration-s", args.duration_s, 1, DURATION_MAX_S)
        if ":" not in args.app:
            raise ValueError(f"APP is module:attribute, as uvicorn takes it (main:app), got {args.app!r}")
    except ValueError as e:
        parser.error(str(e))
    if args.out is None:
        args.out = str(data_dir() / "measure")
    say = (lambda _: None) if args.json else (lambda line: print(line, flush=True))
    report = Report()  # filled as each route is priced, and each run measured: what is saved if it stops early
    try:
        # with --json, stdout holds the verdicts alone: what the harness says on the way goes to stderr
        with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
            measure(args, Job(routes, shares, env, folder), say, report)
    except (RuntimeError, OSError) as e:  # ServerError, PricingError: the message carries the app's log
        print(f"labserver measure: {e}", file=sys.stderr)
        _save(args, report, f"stopped: {str(e).splitlines()[0]}")
        return 2
    except KeyboardInterrupt:
        saved = _save(args, report, "interrupted (Ctrl-C)")
        print(f"labserver measure: interrupted; what was measured so far, marked so: {saved}", file=sys.stderr)
        return 130
    verdicts = report.verdicts
    saved = _save(args, report, "complete")
    print(f"labserver measure: verdicts saved in {saved}", file=sys.stderr)
    below = {v.route: v.ceiling() for v in verdicts if v.route in floors and not v.ceiling() >= floors[v.route]}
    if args.json:
        print(json.dumps([v.as_dict() for v in verdicts], indent=2, default=str))
    for route, ceiling in below.items():
        print(
            f"labserver measure: {route} reaches {ceiling:,.0f} req/s, under --at-least {floors[route]:,.0f}",
            file=sys.stderr if args.json else sys.stdout,
        )
    return 1 if below else 0


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}")


@dataclass(frozen=True)
class Job:
    """What the command was asked, checked: the routes, the mix's shares (none: no mix), the app's environment and
    the folder it is imported from."""

    routes: list
    shares: dict[str, float]
    env: dict[str, str]
    folder: Path


@dataclass
class Report:
    """What the command has found so far: each route's verdict once priced (its runs added as they are measured),
    and the mix's table where one was asked. Saved as it stands however the command ends."""

    verdicts: list = field(default_factory=list)
    mix: list[dict] | None = None


def _save(args: argparse.Namespace, report: Report, state: str) -> Path:
    """`report` as JSON in `--out`, marked with how the command ended (`complete`, or why not)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    path = Path(args.out) / f"measure-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    verdicts = [v.as_dict() for v in report.verdicts]
    record = {"app": args.app, "routes": args.routes, "state": state, "verdicts": verdicts, "mix": report.mix}
    path.write_text(json.dumps(record, indent=2, default=str))
    return path


def measure(args: argparse.Namespace, job: Job, say: Any, report: Report) -> None:
    """Start the app, price and predict every route before any load, then sweep each one unless predict-only; each
    route's verdict into `report` once priced, its runs as they are measured."""
    from labserver.harness.load.client import PricingError
    from labserver.yourapp import measure as m
    from labserver.yourapp.resources import mix

    server = m.AppServer(args.app, folder=job.folder, env=job.env, workers=args.workers, threads=args.threads)
    with server:
        say(f"{args.app}: {args.workers} worker(s), {server.settings.threads} threads each, on {server.url}")
        try:
            priced = m.predict_all(server, job.routes, args.users, args.duration_s)
        except PricingError as e:  # the app's log says why a route failed: shown before it stops
            raise PricingError(f"{e}\n--- the app's log ---\n{server.log_tail()}") from None
        report.verdicts += [each.verdict for each in priced]
        for each in priced:
            say(_predicted(each.verdict, args.users))
        if job.shares:
            table = mix(priced, job.shares, args.users)
            report.mix = table.to_dict("records")
            mixed = ", ".join(f"{route} {share:.0%}" for route, share in job.shares.items())
            say(f"the mix ({mixed}) at {args.users} users, before any load:\n{table.to_string(index=False)}")
        if not args.predict_only:
            for each in priced:
                say(f"{each.verdict.route}: measuring, 1 to {args.users} users, {args.duration_s} s each")
                m.sweep(each.stage, each.verdict, args.users, progress=False, say=say)
                say(_measured(each.verdict))


def _predicted(v: Any, users: int) -> str:
    from labserver.harness.load.measurement import HOT_MOST
    from labserver.yourapp.patterns import DEPENDENCY
    from labserver.yourapp.resources import words

    n = v.def_dependencies
    said = v.runs_on == DEPENDENCY  # its words already say a def dependency takes a thread
    deps = f", {n} def {'dependency' if n == 1 else 'dependencies'} in the thread pool" if n and not said else ""
    deps += f" (a thread held {v.thread_hold_ms:.1f} ms a request)" if math.isfinite(v.thread_hold_ms) else ""
    return (
        f"{v.route} ({v.endpoint or 'endpoint not found: read as async def'}, runs on the {v.runs_on}"
        f"{deps}): S {v.service_ms:.1f} ms alone, "
        f"CPU {v.loop_ms:.2f} ms on the loop + {v.threads_ms:.2f} ms in threads per request "
        f"({v.busy_cpu_ms:.2f} ms in all with {HOT_MOST} in flight, as runs of as many users are priced)\n"
        f"  predicted before any load: {v.predicted_rps:,.0f} req/s at {users} users, bound by {words(v.bound)}\n"
        f"  the decision card's row: {v.card}\n"
        f"  what moves it: {v.change}"
    )


def _measured(v: Any) -> str:
    measured = v.measured_rps
    ratio = measured / v.predicted_rps if math.isfinite(measured) and v.predicted_rps else math.nan
    law, fitted = v.law(), ""
    if math.isfinite(law.lam):
        top = (
            f"peaks at {law.peak_rps:,.0f} req/s with {law.peak_users:,.0f} users"
            if math.isfinite(law.peak_users)
            else f"flattens at {law.peak_rps:,.0f} req/s"
        )
        fitted = f"\n  the Universal Scalability Law on these runs: σ {law.sigma:.3f}, κ {law.kappa:.5f}; it {top}"
    return f"  {v.route}: measured up to {measured:,.0f} req/s ({ratio:.2f} of the prediction); {v.stopped}{fitted}"
