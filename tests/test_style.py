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


def test_the_formatter_keeps_every_notebook_cell_as_it_is():
    # a cell the formatter may not touch drifts from the style the rest of the course keeps
    skipped = [p.name for p in sorted((ROOT / "notebooks").glob("*.ipynb")) if "fmt: skip" in p.read_text()]
    assert not skipped, f"`# fmt: skip` in {skipped}: let `ruff format` keep the cell"
