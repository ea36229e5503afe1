"""The lessons' code type-checked as the library is: each notebook's code cells, as one module, through mypy.

A notebook is where a learner calls the lab: a call the library's types refuse (a parameter now
keyword-only, a float where a count goes) fails here, not in a learner's kernel halfway through.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from labserver.paths import ROOT

MYPY = Path(sys.executable).with_name("mypy")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def code_of(notebook: Path) -> str:
    """A notebook's code cells as one module; IPython's magics and shell lines become comments."""
    cells = [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
    lines = [
        f"# {line}" if line.lstrip().startswith(("%", "!")) else line
        for cell in cells
        for line in [*"".join(cell["source"]).splitlines(), ""]
    ]
    return "\n".join(lines) + "\n"


def mypy(folder: Path) -> subprocess.CompletedProcess:
    if not MYPY.exists():
        pytest.skip(f"mypy is not installed beside {sys.executable} (the `dev` extra)")
    command = [str(MYPY), "--config-file", str(ROOT / "pyproject.toml"), str(folder)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def write_modules(folder: Path, notebooks: list[Path]) -> None:
    for notebook in notebooks:
        (folder / f"lesson_{notebook.stem}.py").write_text(code_of(notebook))


def test_every_lesson_calls_the_lab_as_its_types_allow(tmp_path):
    write_modules(tmp_path, NOTEBOOKS)
    result = mypy(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_call_the_types_refuse_fails(tmp_path):
    cell = {"cell_type": "code", "source": ["%matplotlib inline\n", "from labserver.harness.load import run as load\n",
                                            "load.sweep(None, ['gather'], [10], 3)\n"]}  # fmt: skip
    planted = tmp_path / "nb" / "planted.ipynb"
    planted.parent.mkdir()
    planted.write_text(json.dumps({"cells": [cell]}))
    (tmp_path / "out").mkdir()
    write_modules(tmp_path / "out", [planted])
    result = mypy(tmp_path / "out")
    assert result.returncode != 0, result.stdout
    assert 'Too many positional arguments for "sweep"  [call-arg]' in result.stdout, result.stdout
