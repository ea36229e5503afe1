"""The decision card (lesson 99): what to write in an endpoint, its ceiling, and the ratio that shows it here.

`ROWS` is the card as data, in the order a developer reads it: each row is declared by the lesson
that shows it (labserver/lessons/, `card_row.Row`), with its ceiling as the model
(`labserver.theory.model.predict`) prices it and the figure that shows it. `card` reads each row's
figure from the runs on disk (`load_runs`), "not measured yet" where they are missing;
`ranged_card` reads it over the last batches; `markdown` prints the card for the README and the site.

The ceilings' symbols: io is a request's wait and cpu its CPU in the worker (the server's own
included), both in seconds; threads is the thread pool's size (40, AnyIO's default), per worker.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

from labserver import checks, lessons
from labserver.harness.rows import results
from labserver.lessons.card_row import NOT_YET, Row
from labserver.paths import ROOT
from labserver.yourapp import measure

COLUMNS = ["situation", "write", "ceiling", "how you would notice it", "measured", "lesson"]
RANGE_BATCHES = 3  # the README's card: each figure's range over the last this many batches on disk
MOVES = 0.2  # a figure whose range passes ±this share of its middle moves with the machine: its row says why


ROWS = [
    lessons.async_vs_sync.AWAITABLE_IO,
    lessons.async_vs_sync.BLOCKING_LIBRARY,
    lessons.blocking.HANDED_TO_A_THREAD,
    lessons.sequential_vs_gather.INDEPENDENT_WAITS,
    lessons.app_threads.BLOCKING_DEPENDENCY,
    lessons.workers.CPU_BOUND,
    lessons.one_slow_route.BESIDE_QUICK_ROUTES,
    lessons.cpu_bound.RELEASED_GIL,
    lessons.without_the_gil.FREE_THREADED,
    lessons.without_the_gil.INTERPRETER_POOL,
    lessons.client_side.CALLING_SERVICES,
    lessons.calling_services.FAN_OUT,
    lessons.clients_that_leave.CLIENTS_THAT_LEAVE,
    lessons.database.DATABASE_POOL,
    lessons.overload.OVERLOAD,
    lessons.blocking.NEVER_BLOCK_THE_LOOP,
]

# The rows `python -m labserver measure` names on an app of one's own (lesson 15): each names the command, which the
# README's section explains (a link to it would be dead in lesson 99, which shows the card too)
YOURS = tuple(measure.CARD.values())
YOURS_LINK = "15, your app (`python -m labserver measure`)"

# The rules a developer needs first: the README's short card, above the full one
FIRST = (
    "Awaitable I/O: an async driver, `asyncio.sleep`, `httpx.AsyncClient`",
    "A blocking library: requests, a sync database driver",
    "Never: `time.sleep` (or any blocking call) in `async def`",
    "CPU-bound work",
    "Calling other services over HTTP (a client in your endpoint or script)",
)


def lessons_of(row: Row) -> str:
    """The lessons that show `row`, and where `measure` names it on an app of one's own, the link to how."""
    return ", ".join([*row.lessons, *([YOURS_LINK] if row.situation in YOURS else [])])


def card(runs: pd.DataFrame) -> pd.DataFrame:
    """The decision card with each row's ratio measured on this machine, from `runs` (one row per run)."""
    out = []
    for row in ROWS:
        got = row.measure(runs)
        measured = got.text if got.text != NOT_YET else f"{NOT_YET} ({row.shows})"
        out.append([row.situation, row.write, row.ceiling, row.notice, measured, lessons_of(row)])
    return pd.DataFrame(out, columns=COLUMNS)


def batches(runs: pd.DataFrame, count: int) -> list[str]:
    """The last `count` batches of `make figures` in `runs` that ran every lesson the card reads, oldest first (their
    ids sort by time): one lesson run again on its own is not a batch of the card."""
    if runs.empty or not {"batch", "lesson"} <= set(runs):
        return []
    wanted = {lesson for row in ROWS for lesson in row.lessons}
    ran = runs.dropna(subset=["batch"]).groupby(runs["batch"].astype(str))["lesson"]
    whole = [b for b, ran_here in ran if b and wanted <= {str(x)[:2] for x in ran_here.dropna()}]
    return sorted(whole)[-count:]


def ranged(row: Row, runs: pd.DataFrame, ids: list[str]) -> str:
    """`row`'s figure in each batch of `ids`: its range over them and the count, then the last one's words (a
    learner's own run is compared with the range, not with one batch's figure); a range wider than ±MOVES of its
    middle says why (`row.moves`)."""
    got = [row.measure(runs[runs["batch"].astype(str) == b]) for b in ids]
    known = [g for g in got if math.isfinite(g.ratio)]
    if not known:
        return f"{NOT_YET} ({row.shows})"
    low, high = min(g.ratio for g in known), max(g.ratio for g in known)
    span = f"{low:.3g}" if f"{low:.3g}" == f"{high:.3g}" else f"{low:.3g}–{high:.3g}"
    text = f"{span} over {len(known)} batch{'es' * (len(known) > 1)} (the last: {known[-1].text})"
    if high - low > MOVES * (high + low):
        text += f"; moves past ±{MOVES:.0%}: {row.moves or 'why is not known yet'}"
    return text


def ranged_card(runs: pd.DataFrame, count: int = RANGE_BATCHES) -> pd.DataFrame:
    """The card with each row's figure as a range over the last `count` batches of `runs` (`ranged`)."""
    ids = batches(runs, count)
    out = [[row.situation, row.write, row.ceiling, row.notice, ranged(row, runs, ids), lessons_of(row)] for row in ROWS]
    return pd.DataFrame(out, columns=COLUMNS)


def short(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of `frame` a developer needs first (FIRST), with what to write and its ceiling."""
    return frame[frame["situation"].isin(FIRST)][["situation", "write", "ceiling"]]


def markdown(frame: pd.DataFrame) -> str:
    """`frame` (from `card`) as a Markdown table."""
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    for values in frame.itertuples(index=False):
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in values) + " |")
    return "\n".join(lines) + "\n"


MARKS = {
    "short": ("<!-- short card: `make card` writes it from labserver/course/card.py -->", "<!-- /short card -->"),
    "card": (
        "<!-- card: `make card` writes it from labserver/course/card.py and the runs -->",
        "<!-- /card -->",
    ),
}


def between(text: str, name: str) -> str:
    """What `text` holds between the marks of `name` (MARKS)."""
    start, end = MARKS[name]
    if start not in text or end not in text:
        raise ValueError(f"the marks of the {name} are missing: {start} ... {end}")
    return text.split(start, 1)[1].split(end, 1)[0]


def written(text: str, name: str, body: str) -> str:
    """`text` with `body` between the marks of `name`."""
    start, end = MARKS[name]
    return text.replace(f"{start}{between(text, name)}{end}", f"{start}\n{body}{end}")


def main(argv: list[str] | None = None) -> int:
    """`make card`: the README's short card and card, each figure a range over the last batches on disk."""
    parser = argparse.ArgumentParser(prog="python -m labserver.course.card", description=main.__doc__)
    parser.add_argument(
        "--batches", type=int, default=RANGE_BATCHES, help="batches to range over (default: %(default)s)"
    )
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        checks.whole("--batches", args.batches, 1)
    except ValueError as e:
        parser.error(str(e))
    runs = results.load_runs()
    ids = batches(runs, args.batches)
    if len(ids) < args.batches:
        print(
            f"make card: {len(ids)} batch(es) on disk, {args.batches} asked: run `make figures REPEAT={args.batches}`"
        )
        return 1
    frame = ranged_card(runs, args.batches)
    cores = runs["usable_cores"].max() if "usable_cores" in runs else math.nan
    source = f"Measured here ({cores:g} usable cores): batches {ids[0]} to {ids[-1]}, the last {len(ids)} complete.\n\n"
    text = args.readme.read_text()
    text = written(written(text, "short", markdown(short(frame))), "card", source + markdown(frame))
    args.readme.write_text(text)
    print(f"make card: {args.readme} written from {len(ids)} batches ({ids[0]} to {ids[-1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
