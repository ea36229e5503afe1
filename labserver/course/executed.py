"""What the last batch left: each executed lesson, when it ran, and the machine its runs measured on.

`make figures` writes one executed copy per lesson into data/executed/ (papermill records in its
metadata when it started and ended) and every run's manifest into data/runs/<run-id>/ (the
machine's CPUs and platform, the commit, the batch id). The executed copy names no batch, and
`make figures 03` rewrites one lesson alone; so a lesson's runs are found by time, those of its
name that started while its notebook ran, and each lesson carries its own date and machine.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from labserver.paths import NOTEBOOKS, data_dir, runs_dir

LESSON_GLOB = "[0-9][0-9]_*.ipynb"  # the batch's own pattern (batch.lessons)
VERDICT = re.compile(r"^\[(PASS|FAIL|SKIP)\] ", re.MULTILINE)  # how a claim prints itself (claims.Verdict)


@dataclass(frozen=True)
class Machine:
    """The machine a run measured on, as its manifest's `environment` tells."""

    cpu_count: int | None
    usable_cores: float | None
    platform: str
    python: str

    def __str__(self) -> str:
        cpus = f"{self.cpu_count} CPUs" if self.cpu_count else "CPUs unknown"
        if self.usable_cores is not None and self.usable_cores != self.cpu_count:
            cpus += f" ({self.usable_cores:g} usable)"
        return f"{cpus}, {self.platform}, Python {self.python}"


@dataclass
class Lesson:
    """One lesson: its executed copy (None if the batch did not run it) and what its runs say."""

    name: str
    title: str
    notebook: Path | None = None
    started: datetime | None = None
    ended: datetime | None = None
    stopped: bool = False  # papermill recorded an exception: the copy ends where the lesson broke
    claims: Counter = field(default_factory=Counter)  # PASS / FAIL / SKIP
    runs: int = 0
    machines: list[Machine] = field(default_factory=list)
    batches: list[str] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)

    @property
    def executed(self) -> bool:
        return self.notebook is not None

    def when(self) -> str:
        if not self.executed:
            return "not run in this batch"
        if not (self.started and self.ended):
            return "date unknown"
        return f"{self.started:%Y-%m-%d %H:%M}–{self.ended:%H:%M} UTC"

    def source(self) -> str:
        """The commit and the batch its runs came from."""
        if self.executed and not self.runs:
            return "no runs of its own"
        return " · ".join(", ".join(x) for x in (self.commits, self.batches) if x)

    def measured(self) -> str:
        """One line: when, on what, from which commit and batch (what is known of it)."""
        if not self.executed:
            return self.when()
        if not self.runs:
            return f"{self.when()}; no load runs of its own (a lesson that reads the runs on disk)"
        parts = [self.when(), "; ".join(str(m) for m in self.machines) or "machine unknown"]
        if self.commits:
            parts.append("commit " + ", ".join(self.commits))
        if self.batches:
            parts.append("batch " + ", ".join(self.batches))
        return " · ".join(parts)


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def title(notebook: dict) -> str:
    """The notebook's first Markdown heading, without its #."""
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "markdown":
            for line in "".join(cell.get("source", "")).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def claims(notebook: dict) -> Counter:
    """How many claims the executed notebook printed as passed, failed and skipped."""
    counts: Counter[str] = Counter()
    for cell in notebook.get("cells", []):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                counts.update(VERDICT.findall("".join(out.get("text", ""))))
    return counts


def manifests(folder: Path | None = None) -> list[dict]:
    """Every complete run's manifest (a .partial- folder is a run cut short: never a result)."""
    found = []
    for path in sorted((folder or runs_dir()).glob("*/manifest.json")):
        if path.parent.name.startswith("."):
            continue
        try:
            found.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue  # a torn or unreadable manifest says nothing about the machine
    return found


def _attach_runs(lesson: Lesson, runs: list[dict]) -> None:
    assert lesson.started and lesson.ended  # lessons() attaches runs only to a lesson with both
    # Manifests keep whole seconds: a run that started in the notebook's first second counts.
    start = lesson.started.replace(microsecond=0)
    mine = [
        m for m in runs
        if m.get("lesson") == lesson.name and m.get("started_at")
        and start <= datetime.fromisoformat(m["started_at"]) <= lesson.ended
    ]  # fmt: skip
    lesson.runs = len(mine)
    for m in mine:
        env = m.get("environment") or {}
        _add(
            lesson.machines,
            Machine(env.get("cpu_count"), env.get("usable_cores"), env.get("platform", "?"), env.get("python", "?")),
        )
        _add(lesson.commits, env.get("git_commit"))
        _add(lesson.batches, (m.get("result") or {}).get("batch"))


def _add(seen: list, value) -> None:
    if value and value not in seen:
        seen.append(value)


def read_lesson(notebook: Path, runs: list[dict]) -> Lesson:
    """An executed lesson: its title, times and claims from the notebook, its machine from its runs."""
    nb = json.loads(notebook.read_text())
    meta = nb.get("metadata", {}).get("papermill", {})
    lesson = Lesson(
        name=notebook.stem,
        title=title(nb),
        notebook=notebook,
        started=_time(meta.get("start_time")),
        ended=_time(meta.get("end_time")),
        stopped=bool(meta.get("exception")),
        claims=claims(nb),
    )
    if lesson.started and lesson.ended:
        _attach_runs(lesson, runs)
    return lesson


def lessons(executed: Path | None = None, runs: list[dict] | None = None, notebooks: Path = NOTEBOOKS) -> list[Lesson]:
    """Every lesson, in order: those the batch executed, and those of notebooks/ it has not run (yet)."""
    executed = executed or data_dir() / "executed"
    runs = manifests() if runs is None else runs
    found = {nb.stem: read_lesson(nb, runs) for nb in sorted(executed.glob(LESSON_GLOB))}
    for nb in sorted(notebooks.glob(LESSON_GLOB)):
        if nb.stem not in found:
            found[nb.stem] = Lesson(name=nb.stem, title=title(json.loads(nb.read_text())))
    return [found[name] for name in sorted(found)]


def machines(found: list[Lesson]) -> list[Machine]:
    """The machines the lessons' runs measured on, each once (one, unless lessons came from different hosts)."""
    seen: list[Machine] = []
    for lesson in found:
        seen += [m for m in lesson.machines if m not in seen]
    return seen
