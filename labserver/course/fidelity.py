"""How well the model explains the runs, and how well it predicted them: per lesson, two shares and the worst.

Each run has two predictions: the one made before it, from one user's prices (`predicted_before_rps`,
harness/load/pricing.py), and the one that explains it after, priced with the CPU it measured
(`predicted_rps`). The course's targets: in every lesson, at least 90% of valid runs within ±15%
of what was predicted before them; at least 95% within ±10% of the explanation, and the I/O-bound
runs within ±3%. A run that other programs or the host disturbed (`disturbed`) is counted apart.
Lesson 99, `make figures` and `make bench` report these on the runs of one batch (LAB_BATCH_ID, set
by `make figures`) or, outside a batch, of the current commit.
"""

from __future__ import annotations

import pandas as pd
import psutil
from pandas.io.formats.style import Styler

from labserver import config
from labserver.demo.settings import THREADS_DEFAULT
from labserver.harness.rows import results
from labserver.harness.rows.results import environment
from labserver.harness.rows.usage import DISTURBED
from labserver.labels import client_label, pattern_label
from labserver.theory.bottlenecks import CPU_BOUND

TOLERANCE = 0.10
IO_TOLERANCE = 0.03
SHARE = 0.95
BEFORE_TOLERANCE = 0.15
BEFORE_SHARE = 0.90


def current(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of this batch (LAB_BATCH_ID) or, outside a batch, of the current commit: not older code's."""
    batch = config.BATCH_ID.read()
    if batch and "batch" in runs:
        return runs[runs["batch"] == batch]
    commit = environment()["git_commit"]
    if not commit or "git_commit" not in runs:
        return runs  # not a git checkout, or runs from before commits were recorded: nothing to tell apart
    return runs[runs["git_commit"] == commit]


def io_bound(runs: pd.DataFrame) -> pd.Series:
    """Runs whose prediction is set by waiting (users, threads, an event loop held), not by a CPU."""
    return ~runs["bottleneck"].isin(CPU_BOUND)


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per lesson, over its valid runs that nothing disturbed: the share within ±15% of the prediction made before
    them and its worst run; the share within ±10% of the explained one, of the I/O-bound ones within ±3%, and the
    worst; then the disturbed runs, counted apart, and their share within ±15% before."""
    columns = [
        "lesson", "runs", "within_15_before", "worst_before", "worst_before_run", "within_10", "io_runs",
        "io_within_3", "worst_ratio", "worst_run", "disturbed", "disturbed_within_15_before",
    ]  # fmt: skip
    if runs.empty or "ratio" not in runs:  # no runs on disk (lesson 99 run first) read back as a frame of no columns
        return pd.DataFrame(columns=columns)
    valid = runs[runs["valid"].astype(bool)].dropna(subset=["ratio"]).copy()
    valid["lesson"] = valid["lesson"].fillna("--").astype(str).str[:2]
    valid["off"] = (pd.to_numeric(valid["ratio"]) - 1).abs()
    nan = pd.Series(float("nan"), index=valid.index)
    valid["before"] = pd.to_numeric(valid["ratio_before"]) if "ratio_before" in valid else nan
    valid["off_before"] = (valid["before"] - 1).abs()
    valid["io"] = io_bound(valid)
    valid["apart"] = valid["disturbed"].eq(True) if "disturbed" in valid else False  # runs from before: not marked
    rows = []
    for lesson, every in valid.groupby("lesson"):
        group, apart = every[~every["apart"]], every[every["apart"]]
        io = group[group["io"]]
        judged = group.dropna(subset=["off_before"])
        worst = group.loc[group["off"].idxmax()] if len(group) else None
        missed = judged.loc[judged["off_before"].idxmax()] if len(judged) else None
        rows.append(
            {
                "lesson": lesson,
                "runs": len(group),
                "within_15_before": _share(judged["off_before"], BEFORE_TOLERANCE),
                "worst_before": missed["before"] if missed is not None else float("nan"),
                "worst_before_run": describe(missed) if missed is not None else "",
                "within_10": _share(group["off"], TOLERANCE),
                "io_runs": len(io),
                "io_within_3": _share(io["off"], IO_TOLERANCE),
                "worst_ratio": worst["ratio"] if worst is not None else float("nan"),
                "worst_run": describe(worst) if worst is not None else "",
                "disturbed": len(apart),
                "disturbed_within_15_before": _share(apart["off_before"].dropna(), BEFORE_TOLERANCE),
            }
        )
    return pd.DataFrame(rows, columns=columns)


def _share(off: pd.Series, tolerance: float) -> float:
    """The share of `off` (distances from 1) within `tolerance`; NaN for none."""
    return float((off <= tolerance).mean()) if len(off) else float("nan")


def lines(fidelity: pd.DataFrame) -> list[str]:
    """`table`, a line per lesson, as `make figures` prints it."""
    out = []
    for r in fidelity.itertuples():
        before = f"{r.within_15_before:.0%}" if pd.notna(r.within_15_before) else "--"
        explained = f"{r.within_10:.0%}" if pd.notna(r.within_10) else "--"
        text = f"  {r.lesson}: {r.runs:3d} runs, {before:>4} within ±15% of the prediction made before them, "
        text += f"{explained:>4} within ±10% of the explained one"
        if r.disturbed:
            text += f"; {r.disturbed} disturbed, counted apart"
        if pd.notna(r.worst_before) and abs(r.worst_before - 1) > BEFORE_TOLERANCE:
            text += f"; worst before: {r.worst_before:.2f}, {r.worst_before_run}"
        out.append(text)
    return out


def short_of(fidelity: pd.DataFrame) -> list[str]:
    """A line for each lesson below a target of `table`, naming the target and its share; none where all meet them."""
    targets = (
        ("within_15_before", BEFORE_SHARE, f"within ±{BEFORE_TOLERANCE:.0%} of the prediction made before them"),
        ("within_10", SHARE, f"within ±{TOLERANCE:.0%} of the explained one"),
        ("io_within_3", SHARE, f"of the I/O-bound ones within ±{IO_TOLERANCE:.0%}"),
    )
    out = []
    for r in fidelity.itertuples():
        for column, target, words in targets:
            share = getattr(r, column)
            if pd.notna(share) and share < target:
                out.append(f"{r.lesson}: {share:.0%} {words}, short of the {target:.0%} asked")
    return out


def describe(run: pd.Series, *, bottleneck: bool = True) -> str:
    """A run in one line: pattern and the parameters that set it; what bounds it, unless `bottleneck` is False."""
    client = run.get("client")
    if isinstance(client, str) and client:  # a client run (lesson 06): who sent how many, to which endpoint
        text = f"{client_label(client)} → {pattern_label(str(run['pattern']))}, {_whole(run['users'])} in flight, "
        text += f"{_whole(run['requests'])} sent"
        return text if not bottleneck else f"{text} ({run.get('bottleneck')})"
    parts = [str(run.get("pattern"))]
    parts += [f"{k}={_whole(run[k])}" for k in ("users", "tasks", "io_ms", "cpu_n", "workers") if pd.notna(run.get(k))]
    threads = run.get("threads")
    parts += [f"threads={_whole(threads)}"] if pd.notna(threads) and threads != THREADS_DEFAULT else []
    build = run.get("build")  # which Python served it, where a lesson runs several (lesson 10)
    parts += [f"on {build}"] if isinstance(build, str) and build else ["GIL off"] * (run.get("gil") is False)
    pinned = run.get("cpus")
    parts += [f"pinned to CPU {pinned}"] if isinstance(pinned, str) and pinned else []
    text = " ".join(parts)
    if not bottleneck:
        return text
    text += f" ({run.get('bottleneck')})"
    if pd.notna(run.get("bunched")) and pd.notna(run.get("bunched_at_random")):
        # users in step wait for their bunch, which the model does not price (records.bunched)
        b, r = run["bunched"], run["bunched_at_random"]
        text += f"; {b:.0%} of replies came right after another, {r:.0%} would at random"
    return text


def _whole(value: object) -> object:
    """A count as it is written: 25, not the 25.0 of a column that has a NaN elsewhere."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def before_table(lesson: str, runs: pd.DataFrame | None = None) -> Styler:
    """Each run of `lesson` this kernel made (or `runs`): predicted before it, measured, and where the two differ by
    more than 10%, what its window measured; with a line above it that counts them, and the runs others disturbed."""
    if runs is None:
        runs = current(results.load_runs(lesson))
        if not runs.empty:
            since = pd.Timestamp(psutil.Process().create_time(), unit="s", tz="UTC")
            runs = runs[pd.to_datetime(runs["started_at"]) >= since.floor("s")]
    if runs.empty or "predicted_before_rps" not in runs:
        print("no run of this lesson was predicted before it in this kernel")
        return pd.DataFrame().style
    # a client run (lesson 06) reads no share of the cores others took: it has no sampled window to read it in
    runs = runs.assign(**{c: float("nan") for c in ("disturbed", "disturbed_cpu") if c not in runs})
    disturbed = runs["disturbed"].eq(True)
    valid = runs["valid"].astype(bool)
    shown = pd.DataFrame(
        {
            "run": [describe(r, bottleneck=False) for _, r in runs.iterrows()],
            "predicted before (req/s)": runs["predicted_before_rps"],
            "measured (req/s)": runs["rps"],
            "measured / before": runs["ratio_before"],
            "counted": valid.map({True: "yes", False: "no: invalid"})
            .where(runs["ratio_before"].notna() | ~valid, "no: not predicted")
            .where(~disturbed, "apart: disturbed"),
            "others took (cores)": runs["disturbed_cpu"].where(disturbed),
            "why it missed by over 10% (what this run measured)": runs["before_miss"].fillna(""),
        }
    ).reset_index(drop=True)
    judged = runs[valid & ~disturbed & runs["ratio_before"].notna()]
    within = int(((judged["ratio_before"] - 1).abs() <= BEFORE_TOLERANCE).sum())
    line = f"{within} of {len(judged)} runs counted within ±15% of the prediction made before them"
    if len(judged):
        share = within / len(judged)
        line += f" ({share:.1%}: {'under' if share < BEFORE_SHARE else 'meets'} the course's aim of {BEFORE_SHARE:.0%})"
    if disturbed.any():
        line += f"; {int(disturbed.sum())} disturbed ({_took(runs[disturbed])})"
    print(line)
    print(
        "counted: a valid run, predicted before it, that nothing else disturbed; disturbed: other programs or the"
        f" host took {DISTURBED:g} core or more in its window ('others took'); a run off by over 10% says what its"
        " window measured"
    )
    for missed in prices_missed(judged):
        print(missed)
    formats = {"predicted before (req/s)": "{:.1f}", "measured (req/s)": "{:.1f}", "measured / before": "{:.2f}"}
    return shown.style.hide(axis="index").format(formats, na_rep="").format("{:.2f}", ["others took (cores)"], "")


def prices_missed(runs: pd.DataFrame) -> list[str]:
    """A line for each price its runs missed, past ±15%: several runs of one make-up, priced once, that missed their
    before-prediction, as their median, past ±15%, the way their server CPU per request read past ±15% of its price
    (above it: fewer req/s). Then the price missed, not the runs. Runs whose CPU does not set their rate (an I/O wait
    does) can read far off the price of their CPU and meet their prediction: they are not named."""
    if not {"one_user_cpu_ms", "server_ms"} <= set(runs.columns):
        return []
    lines = []
    for price, group in runs.dropna(subset=["one_user_cpu_ms", "server_ms"]).groupby("one_user_cpu_ms", sort=False):
        read = group["server_ms"] / price
        cpu, served = read.median(), group["ratio_before"].median()
        if len(group) < 2 or abs(cpu - 1) <= BEFORE_TOLERANCE or abs(served - 1) <= BEFORE_TOLERANCE:
            continue
        if (cpu > 1) == (served > 1):  # dearer and faster, or cheaper and slower: not the price
            continue
        name = describe(group.iloc[0], bottleneck=False)
        waits = " and its runs with other waits" if group["io_ms"].nunique() > 1 else ""
        lines.append(
            f"{len(group)} runs priced once ({name}{waits}) at {price:.2f} ms of server CPU a request ran at "
            f"{_span(group['server_ms'])} ms, median {cpu:.2f}× it: the price missed, not the runs"
        )
    return lines


def _took(disturbed: pd.DataFrame) -> str:
    """What disturbed these runs: the cores others took, as a range."""
    took = disturbed["disturbed_cpu"][disturbed["disturbed_cpu"] >= DISTURBED]
    return f"others took {_span(took)} core" if not took.empty else "marked by an older harness"


def _span(values: pd.Series) -> str:
    low, high = f"{values.min():.2f}", f"{values.max():.2f}"
    return low if low == high else f"{low}–{high}"
