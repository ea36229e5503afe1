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
