"""`make lint` in `make test`: the code, the tests and the notebooks' cells are ruff-clean and ruff-formatted."""

import subprocess
import sys
from pathlib import Path

import pytest

from labserver.paths import ROOT

RUFF = Path(sys.executable).with_name("ruff")


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]])
def test_ruff_finds_nothing(command):
    if not RUFF.exists():
        pytest.skip(f"ruff is not installed beside {sys.executable} (the `dev` extra)")
    result = subprocess.run([str(RUFF), *command], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_notebook_cell_opts_out_of_the_formatter():
    """A lesson's cells keep their layout by the formatter's one setting for notebooks (pyproject.toml), not by
    markers cell by cell; ruff's lint checks them all the same."""
    skipped = [
        f"{path.name}: {line.strip()}"
        for path in sorted((ROOT / "notebooks").glob("*.ipynb"))
        for line in path.read_text().splitlines()
        if "fmt: skip" in line or "fmt: off" in line
    ]
    assert not skipped, skipped


def test_the_formatter_leaves_the_notebooks_even_when_named():
    """Lesson 03's cells pack a call's keywords to the line, which ruff's formatter would undo: excluded, they stay."""
    if not RUFF.exists():
        pytest.skip(f"ruff is not installed beside {sys.executable} (the `dev` extra)")
    named = [str(RUFF), "format", "--check", "notebooks/03_cpu_bound.ipynb"]
    assert subprocess.run(named, cwd=ROOT, capture_output=True, text=True, timeout=120).returncode == 0
    forced = [*named, "--no-force-exclude"]  # the same cell, formatter applied: it would change
    assert subprocess.run(forced, cwd=ROOT, capture_output=True, text=True, timeout=120).returncode == 1
