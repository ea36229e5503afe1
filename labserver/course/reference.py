"""`python -m labserver.course.reference` (`make reference`): one chart per lesson of the last batch, to commit.

The README's lesson map shows a chart per lesson, and data/figures/ is generated and ignored by
git: on the code host those links would lead nowhere. This copies one chart per lesson, as the
batch drew it, to docs/reference/<lesson>.png (named after the lesson, so that the README's links
stay put when the chosen chart changes), and writes docs/reference/README.md: which chart each is,
and the machine and date it was measured on.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

from labserver.course import executed
from labserver.course.executed import Lesson
from labserver.lessons import LESSONS
from labserver.lessons.lesson import DEFAULT_CHART
from labserver.paths import ROOT, figures_dir

OUT = ROOT / "docs" / "reference"


def choose(folder: Path) -> Path | None:
    """The lesson's chosen chart: its `chart` in the registry (labserver/lessons/), else its first chart by name."""
    lesson = LESSONS.get(folder.name)
    chosen = folder / (lesson.chart if lesson else DEFAULT_CHART)
    if chosen.is_file():
        return chosen
    charts = sorted(folder.glob("*.png"))
    return charts[0] if charts else None


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (Linux), else what platform knows of the processor."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _written(chart: Path) -> datetime:
    return datetime.fromtimestamp(chart.stat().st_mtime, UTC)


def notes(charts: dict[str, Path], found: list[Lesson], model: str) -> str:
    """docs/reference/README.md: where the charts come from."""
    by_name = {lesson.name: lesson for lesson in found}
    machines = executed.machines([by_name[n] for n in charts if n in by_name])
    lines = [
        "# Reference figures",
        "",
        "One chart per lesson, as `make figures` drew it, copied here by `make reference` so that the",
        "README's lesson map can show them (data/figures/ is generated on each machine and not committed).",
        "Your own batch draws its charts into data/figures/; run `make reference` after it to replace these.",
        "",
        "**Measured on:** " + ("; ".join(str(m) for m in machines) or "machine unknown (no run manifests)") + ".",
        "",
        f"**CPU model:** {model} (read where `make reference` ran, normally the machine of the batch).",
        "",
        "| lesson | chart | ran | commit · batch |",
        "|---|---|---|---|",
    ]
    for name, chart in charts.items():
        lesson = by_name.get(name)
        ran = lesson.when() if lesson else f"drawn {_written(chart):%Y-%m-%d %H:%M} UTC"
        source = lesson.source() if lesson else ""
        lines.append(f"| [{name}]({name}.png) | `{chart.parent.name}/{chart.name}` | {ran} | {source} |")
    return "\n".join(lines) + "\n"


def copy(figures: Path, out: Path, found: list[Lesson], model: str) -> dict[str, Path]:
    """Replace out/'s charts with the chosen chart of every lesson in figures/; return them by lesson."""
    charts = {d.name: c for d in sorted(figures.iterdir()) if d.is_dir() and (c := choose(d))}
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):
        old.unlink()  # a lesson gone from the batch leaves no stale chart behind
    for name, chart in charts.items():
        shutil.copyfile(chart, out / f"{name}.png")
    (out / "README.md").write_text(notes(charts, found, model))
    return charts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labserver.course.reference", description=__doc__)
    parser.add_argument("--out", type=Path, default=OUT, help="where to copy them (default: docs/reference)")
    args = parser.parse_args(argv)
    figures = figures_dir()
    if not figures.is_dir() or not any(figures.iterdir()):
        print(f"no charts in {figures}: run `make figures` first", file=sys.stderr)
        return 1
    found = executed.lessons()
    charts = copy(figures, args.out, found, cpu_model())
    size = sum((args.out / f"{name}.png").stat().st_size for name in charts)
    print(f"{len(charts)} charts ({size / 1e6:.1f} MB) and README.md in {args.out}")
    for name, chart in charts.items():
        lesson = next((x for x in found if x.name == name), None)
        if lesson is None or not (lesson.started and lesson.ended):
            continue
        if not lesson.started.replace(microsecond=0) <= _written(chart) <= lesson.ended:
            # A chart from another batch than the executed lesson beside it: say so, the notes would mislead.
            print(f"  note: {chart} was not written while {name} ran ({lesson.when()})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
