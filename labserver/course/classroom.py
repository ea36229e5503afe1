"""`python -m labserver.course.classroom`: the lessons with the `live` profile written in, for `make live`.

An instructor re-runs cells in front of a class, where a run cell of a minute is too long. The
`live` profile (course/profiles.py) sizes every run cell to about 20 s. This writes each lesson
into data/live/ with those values in a cell of their own under the parameters cell (papermill's
`injected-parameters`, as the batch's executed copies show them), without running anything, and
copies the pages the lessons link to. The lessons in notebooks/ stay the learner's.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from labserver.course import batch, profiles
from labserver.paths import NOTEBOOKS, data_dir

PROFILE: profiles.Profile = "live"
PAGES = ("glossary.md", "articles.md")  # the pages the lessons link to, beside them


def write(out: Path, profile: profiles.Profile = PROFILE) -> list[Path]:
    """Write every lesson into `out` with `profile`'s parameters in; return the notebooks written."""
    import papermill  # ~2.5 s to import: only when the lessons are written

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for notebook in batch.lessons():
        target = out / notebook.name
        params = profiles.parameters(notebook.stem, profile)
        papermill.execute_notebook(
            str(notebook),
            str(target),
            parameters=params,
            prepare_only=True,
            kernel_name=batch.KERNEL,
            progress_bar=False,
        )
        written.append(target)
    for page in PAGES:
        shutil.copy2(NOTEBOOKS / page, out / page)
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=data_dir() / "live", help="folder to write (default data/live)")
    parser.add_argument("--profile", default=PROFILE, choices=profiles.NAMES, help="profile to write in")
    args = parser.parse_args(argv)
    written = write(args.out, args.profile)
    print(f"{len(written)} lessons with the {args.profile} profile in {args.out}/")


if __name__ == "__main__":
    main()
