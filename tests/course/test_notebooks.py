"""Notebook hygiene (committed clean, one parameters cell papermill reads), and every lesson run by papermill."""

import ast
import json

import nbformat
import pytest

from labserver.course import profiles
from labserver.paths import NOTEBOOKS

ALL = sorted(NOTEBOOKS.glob("*.ipynb"))
LESSONS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
KERNEL = "concurrency-lab"


def _ids(paths):
    return [p.stem for p in paths]


def _parameters_cells(nb) -> list:
    return [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]


def test_there_are_lessons():
    assert LESSONS


@pytest.mark.parametrize("path", ALL, ids=_ids(ALL))
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs or execution counts; clear them before committing"


@pytest.mark.parametrize("path", ALL, ids=_ids(ALL))
def test_one_parameters_cell_of_literals(path):
    nb = nbformat.read(path, as_version=4)
    cells = _parameters_cells(nb)
    assert len(cells) == 1, f"{path.name}: {len(cells)} cells tagged 'parameters', want exactly one"
    for statement in ast.parse(cells[0].source).body:
        written = ast.unparse(statement)
        assert isinstance(statement, ast.AnnAssign), f"{path.name}: `{written}` is not `name: type = value`"
        ast.literal_eval(statement.value)  # literals only: papermill replaces them as text


@pytest.mark.parametrize("path", ALL, ids=_ids(ALL))
def test_papermill_sees_every_parameter_with_help(path):
    from papermill.inspection import inspect_notebook

    nb = nbformat.read(path, as_version=4)
    declared = [s.target.id for s in ast.parse(_parameters_cells(nb)[0].source).body]
    seen = inspect_notebook(str(path))
    assert list(seen) == declared, f"{path.name}: papermill cannot read {set(declared) - set(seen)}"
    no_help = [name for name, p in seen.items() if not p["help"].strip()]
    assert not no_help, f"{path.name}: parameters without a help comment: {no_help}"


@pytest.mark.parametrize("path", LESSONS, ids=_ids(LESSONS))
def test_lesson_has_profiles_it_can_take(path):
    from papermill.inspection import inspect_notebook

    assert path.stem in profiles.PROFILES, f"{path.stem} has no entry in labserver/profiles.py"
    names = set(inspect_notebook(str(path)))
    assert "strict" in names
    for profile in profiles.NAMES:
        unknown = set(profiles.parameters(path.stem, profile)) - names
        assert not unknown, f"profile {profile!r} of {path.stem} sets parameters the notebook lacks: {unknown}"


def _fits(value, annotation: ast.expr) -> bool:
    """Whether a literal fits a parameter's annotation as the lessons write them: a type, list[a type], or a | b."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _fits(value, annotation.left) or _fits(value, annotation.right)
    if isinstance(annotation, ast.Subscript):  # list[int], say
        return isinstance(value, list) and all(_fits(v, annotation.slice) for v in value)
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return value is None
    kind = {"int": int, "float": (int, float), "bool": bool, "str": str, "list": list, "None": type(None)}
    want = kind[ast.unparse(annotation)]
    return isinstance(value, want) and not (isinstance(value, bool) and want in (int, (int, float)))


@pytest.mark.parametrize("path", LESSONS, ids=_ids(LESSONS))
def test_every_profile_gives_each_parameter_its_type_and_quick_the_notebook_s_values(path):
    nb = nbformat.read(path, as_version=4)
    declared = {s.target.id: s for s in ast.parse(_parameters_cells(nb)[0].source).body}
    for profile in profiles.NAMES:
        for name, value in profiles.parameters(path.stem, profile).items():
            wants = ast.unparse(declared[name].annotation)
            assert _fits(value, declared[name].annotation), f"{path.stem} {profile}: {name}={value!r} is not {wants}"
    for name, value in profiles.parameters(path.stem, "quick").items():  # quick is what a learner runs
        assert value == ast.literal_eval(declared[name].value), f"{path.stem}: quick's {name} is not the notebook's"


def test_a_profile_value_of_the_wrong_type_is_found():
    assert not _fits("3", ast.parse("x: int", mode="exec").body[0].annotation)
    assert not _fits([1.5], ast.parse("x: list[int]").body[0].annotation)
    assert not _fits(True, ast.parse("x: int").body[0].annotation)
    assert _fits(None, ast.parse("x: float | None").body[0].annotation)
    assert _fits(2, ast.parse("x: float").body[0].annotation)


@pytest.mark.parametrize("path", LESSONS, ids=_ids(LESSONS))
def test_lesson_uses_the_course_kernel(path):
    assert json.loads(path.read_text())["metadata"]["kernelspec"]["name"] == KERNEL


def _verdict_sites(nb) -> int:
    """How many calls in the lesson's code record a verdict (`needs_cpus` only guards one of them)."""
    calls = [
        node
        for cell in nb.cells
        if cell.cell_type == "code"
        for node in ast.walk(ast.parse(cell.source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    ]
    return sum(1 for c in calls if ast.unparse(c.func.value) == "claims" and c.func.attr in VERDICT_METHODS)


VERDICT_METHODS = {"between", "near", "ratio", "valid"}


@pytest.mark.slow
@pytest.mark.parametrize("path", LESSONS, ids=_ids(LESSONS))
def test_lesson_runs_under_papermill_and_reaches_every_verdict(path, tmp_path, monkeypatch):
    import papermill

    verdicts_file = tmp_path / "claims.jsonl"
    monkeypatch.setenv("LAB_CLAIMS_FILE", str(verdicts_file))  # the kernel inherits it, as in a batch
    params = {**profiles.parameters(path.stem, "smoke"), "strict": False}
    papermill.execute_notebook(
        str(path), str(tmp_path / path.name), parameters=params, kernel_name=KERNEL, cwd=str(NOTEBOOKS),
        progress_bar=False,
    )  # fmt: skip
    # Smoke runs are too small to hold the claims, so pass or fail is not asked: only that every claim
    # was checked and came to a verdict (or said why this machine cannot show it).
    verdicts = [json.loads(line) for line in verdicts_file.read_text().splitlines()] if verdicts_file.exists() else []
    sites = _verdict_sites(nbformat.read(path, as_version=4))
    assert len(verdicts) >= sites > 0, f"{path.stem}: {len(verdicts)} verdicts from {sites} claim checks"
    keys = [v["key"] for v in verdicts]
    assert len(set(keys)) == len(keys), f"{path.stem}: a claim checked twice: {keys}"
