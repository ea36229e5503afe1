"""`python -m labserver.course.batch`: run every lesson through papermill and report every claim.

Executed notebooks land in data/executed/, figures in data/figures/, and one table of
claims is printed at the end; the exit code is non-zero if a claim failed or a lesson broke.
`--repeat N` runs the whole batch N times and writes, under data/bench/, one table of each
claim's passes and worst margin over the N batches: which claims are robust on this machine.
A claim is followed by its key, so a sentence reworded between batches keeps its one row.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from labserver import config
from labserver.checks import whole
from labserver.course import fidelity, profiles
from labserver.course.claims import Verdict
from labserver.demo import cpus
from labserver.harness.processes.machine import stolen_seconds
from labserver.harness.rows import results
from labserver.paths import NOTEBOOKS, data_dir, figures_dir

KERNEL = "concurrency-lab"
REPEAT_MAX = 20


def lessons(selected: list[str] | None = None) -> list[Path]:
    """The lesson notebooks, in order; `selected` keeps those whose name starts with one of its items."""
    found = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if selected:
        found = [nb for nb in found if any(nb.stem.startswith(s) for s in selected)]
        if not found:
            raise SystemExit(f"no lesson matches {selected}; lessons are: {', '.join(nb.stem for nb in lessons())}")
    return found


def run_lesson(notebook: Path, profile: profiles.Profile, out_dir: Path) -> tuple[list[dict], str | None, float]:
    """Execute one lesson; return its claim verdicts, the error that stopped it (if any) and its wall time."""
    import papermill  # ~2.5 s to import: only when a lesson is really run

    # Not strict: a lesson whose claim fails runs on to its end, so that its executed copy keeps what follows the
    # claims (the table of each run's miss and its cause, Deeper's outputs). Its verdicts say it failed.
    params = {**profiles.parameters(notebook.stem, profile), "strict": False}
    fd, claims_file = tempfile.mkstemp(prefix="claims-", suffix=".jsonl")
    os.close(fd)
    os.environ[config.CLAIMS_FILE.name] = claims_file
    # papermill writes its output at the start, after each cell and at the end. Into a file of this
    # batch's own, then renamed over the final name in one step: two batches running the same
    # lesson at once cannot leave a notebook torn between them, and no reader sees half a file.
    partial = out_dir / f".partial-{notebook.stem}-{os.getpid()}.ipynb"
    started = time.perf_counter()
    error = None
    try:
        papermill.execute_notebook(
            str(notebook),
            str(partial),
            parameters=params,
            kernel_name=KERNEL,
            cwd=str(NOTEBOOKS),
            progress_bar=False,
            config=_kernel_config(),
        )
    except papermill.PapermillExecutionError as e:
        error = f"{e.ename}: {e.evalue}"
    finally:
        os.environ.pop(config.CLAIMS_FILE.name, None)
        if partial.exists():  # a failed or cut-short lesson too: its executed copy shows where it stopped
            os.replace(partial, out_dir / notebook.name)
    with open(claims_file) as f:
        verdicts = [json.loads(line) for line in f if line.strip()]
    os.unlink(claims_file)
    return verdicts, error, time.perf_counter() - started


def _kernel_config():
    """Kernel-manager settings under which the kernel encrypts its channels (CurveZMQ).

    Otherwise every lesson prints ipykernel's "Kernel is running over TCP without encryption"
    warning (ipykernel/kernelapp.py). The kernel process logs it straight to the terminal, where
    no filter in this process can catch it; the cure it names is the one taken here: keys that
    jupyter_client provisions when asked and the kernelspec declares "curve" (ipykernel install
    writes that). A pyzmq without CurveZMQ would refuse the setting: the kernel runs as before then.
    """
    import zmq
    from traitlets.config import Config

    return Config(KernelManager={"transport_encryption": "auto" if zmq.has("curve") else "disabled"})


def run_batch(
    notebooks: list[Path], profile: profiles.Profile, out_dir: Path
) -> tuple[list[dict], list[tuple[str, str]]]:
    """Every lesson once, in order: all their claim verdicts, and the lessons that broke (not by a claim)."""
    all_verdicts, broken = [], []
    for nb in notebooks:
        print(f"  {nb.stem} …", end=" ", flush=True)
        stolen_before = stolen_seconds()
        verdicts, error, wall_s = run_lesson(nb, profile, out_dir)
        passed = sum(v["passed"] and not v.get("skipped") for v in verdicts)
        print(f"{passed}/{len(verdicts)} claims passed in {wall_s:.0f} s" + _stolen(stolen_before, wall_s)
              + (f" — stopped: {error}" if error else ""))  # fmt: skip
        all_verdicts += verdicts
        if error and not (verdicts and "ClaimFailed" in error):
            broken.append((nb.stem, error))
    return all_verdicts, broken


def _stolen(before_s: float, wall_s: float) -> str:
    """What the host took of the CPUs the lab may use while a lesson ran (steal time), when it is worth saying."""
    share = (stolen_seconds() - before_s) / (wall_s * cpus.cores()) if wall_s > 0 else 0.0
    # A quiet host takes well under 1%; one busy with other guests takes a tenth of the CPUs or more
    # for minutes on end, enough to fail claims that pass on a quiet one: say so beside them
    # (docs/evidence.md).
    return (
        f" (the host took {share:.0%} of the CPUs meanwhile: steal time, not a quiet machine)" if share >= 0.02 else ""
    )


def _margin(verdict: dict) -> float:
    """A saved verdict's margin (claims.Verdict.margin); a field it lacks reads as None."""
    fields: dict[str, Any] = {k: verdict.get(k) for k in Verdict.__dataclass_fields__}
    return Verdict(**fields).margin


def robustness(rounds: list[list[dict]]) -> pd.DataFrame:
    """One row per claim over several batches: passes, the worst margin, and that margin in units of its spread.

    A claim is its lesson and its key (claims.Verdict.key), whatever its sentence said in each batch:
    the row shows the latest batch's sentence. The spread is the claim's measured value's standard
    deviation over the batches: a claim whose worst margin is a few spreads from its bound holds
    batch after batch; one within a spread of it stands on its edge.
    """
    rows = [
        {"lesson": v["lesson"], "key": v["key"], "claim": v["claim"], "batch": i, "measured": v["measured"],
         "passed": v["passed"], "margin": _margin(v)}
        for i, verdicts in enumerate(rounds)
        for v in verdicts
    ]  # fmt: skip
    frame = pd.DataFrame(rows, columns=["lesson", "key", "claim", "batch", "measured", "passed", "margin"])
    table = frame.groupby(["lesson", "key"], sort=False).agg(
        claim=("claim", "last"),
        passes=("passed", "sum"),
        batches=("batch", "nunique"),
        median=("measured", "median"),
        spread=("measured", "std"),
        worst_margin=("margin", "min"),
    )
    table["margin_in_spreads"] = table["worst_margin"] / table["spread"].where(table["spread"] > 0)
    return table.reset_index()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labserver.course.batch", description=__doc__)
    parser.add_argument("lessons", nargs="*", help="lesson names or prefixes (default: all), e.g. 00 01_async")
    parser.add_argument("--profile", default="quick", choices=profiles.NAMES, help="run sizes (default: quick)")
    parser.add_argument("--repeat", type=int, default=1, help="run the whole batch this many times (default: 1)")
    args = parser.parse_args(argv)
    try:
        whole("--repeat", args.repeat, 1, REPEAT_MAX)
    except ValueError as e:
        parser.error(str(e))

    notebooks = lessons(args.lessons)
    out_dir = data_dir() / "executed"
    out_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault(config.FIGURES_DIR.name, str(figures_dir()))
    # Progress stays on: in a lesson's kernel it is the live view, a frame a second as in a notebook,
    # whose last frame the executed copy keeps (an image, no widget state). `make bench` measures
    # what the view costs the busiest run.
    rounds, failing = [], False
    for i in range(args.repeat):
        # Every run of this batch carries its id: lesson 99 judges the runs of its own batch only.
        os.environ[config.BATCH_ID.name] = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}-{i + 1}"
        round_ = f" (batch {i + 1} of {args.repeat})" if args.repeat > 1 else ""
        print(f"Running {len(notebooks)} lesson(s), profile {args.profile}, into {out_dir}{round_}", flush=True)
        started = time.perf_counter()
        verdicts, broken = run_batch(notebooks, args.profile, out_dir)
        failing |= _report(verdicts, broken, time.perf_counter() - started, out_dir)
        rounds.append(verdicts)
    if args.repeat > 1:
        table = robustness(rounds)
        folder = data_dir() / "bench"
        folder.mkdir(parents=True, exist_ok=True)
        table.to_csv(folder / "claims-repeat.csv", index=False)
        text = table.round(3).to_string(index=False)
        (folder / "claims-repeat.txt").write_text(text + "\n")
        print(f"\nEvery claim over {args.repeat} batches (data/bench/claims-repeat.txt):\n{text}")
    return 1 if failing else 0


def _report(verdicts: list[dict], broken: list[tuple[str, str]], wall_s: float, out_dir: Path) -> bool:
    """Print one batch's claims; True if any failed or a lesson broke."""
    print(f"\nClaims ({wall_s:.0f} s in all):")
    for v in verdicts:
        if v.get("skipped"):
            print(f"  SKIP  {v['lesson']:<20} {v['claim']}: {v['detail']}")
            continue
        mark = "PASS" if v["passed"] else "FAIL"
        print(f"  {mark}  {v['lesson']:<20} {v['claim']}: {v['measured']:.3g} (expected {v['bound']})")
    for name, error in broken:
        print(f"  BROKEN {name}: {error}")
    failed = [v for v in verdicts if not v["passed"] and not v.get("skipped")]
    skipped = sum(bool(v.get("skipped")) for v in verdicts)
    print(
        f"\n{len(verdicts) - len(failed) - skipped} passed, {len(failed)} failed"
        + (f", {skipped} not shown here" if skipped else "")
    )
    _fidelity()
    print(f"Figures: {config.FIGURES_DIR.read()}   Executed notebooks: {out_dir}")
    return bool(failed or broken)


def _fidelity() -> None:
    """Per lesson, the share of this batch's valid runs within ±15% of what was predicted before them, and within
    ±10% of the explanation after them (course/fidelity.py)."""
    made = fidelity.current(results.load_runs())
    if made.empty:
        return
    print("\nPredicted before each run, and explained after it (valid runs; disturbed ones counted apart):")
    for line in fidelity.lines(fidelity.table(made)):
        print(line)


if __name__ == "__main__":
    sys.exit(main())
