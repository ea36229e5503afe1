"""Every list a lesson takes as a parameter goes through checks.parameter before anything starts.

`users = 50` in the parameters cell, or papermill's `-p users "[10, 30]"` (text), would otherwise
fail deep inside a run with "'int' object is not iterable" or "got '['".
"""

import ast

import nbformat
import pytest

from labserver.paths import NOTEBOOKS

ALL = sorted(NOTEBOOKS.glob("*.ipynb"))


def _lists_and_checked(path) -> tuple[set[str], set[str]]:
    """The parameters annotated `list`, and those the next code cell reassigns from checks.parameter."""
    code = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    at = next(i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", []))
    lists = {
        s.target.id
        for s in ast.parse(code[at].source).body
        if isinstance(s, ast.AnnAssign) and ast.unparse(s.annotation).startswith("list")
    }
    checked = set()
    for node in ast.walk(ast.parse(code[at + 1].source)):  # the validation cell, before any server starts
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            call = node.value
            called = ast.unparse(call.func)
            name = call.args[0].value if call.args and isinstance(call.args[0], ast.Constant) else None
            if called in ("checks.parameter", "parameter") and [ast.unparse(t) for t in node.targets] == [name]:
                checked.add(name)
    return lists, checked


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_every_list_parameter_is_checked_in_the_validation_cell(path):
    lists, checked = _lists_and_checked(path)
    assert not lists - checked, f"{path.name}: list parameters not passed through checks.parameter: {lists - checked}"


def test_the_lessons_have_list_parameters_to_check():
    # the test above must not pass for want of anything to look at
    assert sum(len(_lists_and_checked(p)[0]) for p in ALL) >= 8
