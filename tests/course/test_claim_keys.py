"""Every claim check in every notebook names its claim by a key, unique in its lesson (claims.Claims).

Claims raises at a check whose key is missing, not an id or used twice, but only when the
lesson runs; this reads the notebooks' source, so a check added without a key, or with a key
another check of the lesson has, fails here without running anything.
"""

import ast
import json
from dataclasses import dataclass

import pytest

from labserver.course.claims import KEY
from labserver.paths import NOTEBOOKS
from labserver.theory.bottlenecks import SERVER_OR_GENERATOR_CPU, Bottleneck

NOTEBOOKS_ALL = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
CHECKS = {"between", "ratio", "near", "valid", "cannot_show"}  # each records a verdict under its key
GUARD = "needs_cpus"  # records one only where the lab may not use the CPUs: then under the key of the claim it guards


@dataclass(frozen=True)
class Site:
    method: str
    key: ast.expr | None
    branches: tuple[tuple[tuple[int, int, int], str], ...]  # the `if`s around it: ((cell, line, column), side)
    line: str  # the call, for messages

    @property
    def key_text(self) -> str:
        return ast.unparse(self.key) if self.key is not None else ""


def _is_check(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and ast.unparse(node.func.value) == "claims"
        and node.func.attr in CHECKS | {GUARD}
    )


def _sites(node: ast.AST, cell: int = 0, branches: tuple = ()) -> list[Site]:
    """Every `claims.<check>(...)` under `node`, with the branches of the `if`s it sits in."""
    found = []
    if _is_check(node):
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        key = next((kw.value for kw in node.keywords if kw.arg == "key"), None)
        found.append(Site(node.func.attr, key, branches, ast.unparse(node)[:100]))
    for field, value in ast.iter_fields(node):
        where = (cell, getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        inner = (*branches, (where, field)) if isinstance(node, ast.If) else branches
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                found += _sites(child, cell, inner)
    return found


def claim_sites(path) -> list[Site]:
    cells = json.loads(path.read_text())["cells"]
    return [
        site
        for i, cell in enumerate(cells)
        if cell["cell_type"] == "code"
        for site in _sites(ast.parse("".join(cell["source"])), i)
    ]


def _apart(a: Site, b: Site) -> bool:
    """True if the two calls cannot both record a verdict in one run of the lesson."""
    shared = dict(a.branches).keys() & dict(b.branches).keys()
    for node in shared:
        sides = {dict(a.branches)[node], dict(b.branches)[node]}
        if sides == {"body", "orelse"}:  # an if and its else
            return True
        if sides == {"test", "body"} and GUARD in {a.method, b.method}:  # a guard and the check it lets run
            return True
    return False


@pytest.mark.parametrize("path", NOTEBOOKS_ALL, ids=[p.stem for p in NOTEBOOKS_ALL])
def test_every_claim_check_passes_a_key_that_is_an_id(path):
    sites = claim_sites(path)
    assert sites, f"{path.stem} checks no claim"
    for site in sites:
        assert site.key is not None, f"{path.stem}: a claim check without key=: {site.line}"
        if isinstance(site.key, ast.Constant):
            assert isinstance(site.key.value, str) and KEY.fullmatch(site.key.value), (
                f"{path.stem}: key {site.key_text} is not an id (lowercase letters, digits, hyphens)"
            )
        else:  # a check in a loop: a key that names what the loop is over, its fixed parts an id's characters
            assert isinstance(site.key, ast.JoinedStr), f"{path.stem}: key {site.key_text} is not written out"
            assert any(isinstance(v, ast.FormattedValue) for v in site.key.values), site.key_text
            fixed = "".join(v.value for v in site.key.values if isinstance(v, ast.Constant))
            assert set(fixed) <= set("abcdefghijklmnopqrstuvwxyz0123456789-"), site.key_text


@pytest.mark.parametrize("path", NOTEBOOKS_ALL, ids=[p.stem for p in NOTEBOOKS_ALL])
def test_keys_are_unique_in_each_lesson(path):
    sites = claim_sites(path)
    for i, a in enumerate(sites):
        for b in sites[i + 1 :]:
            if a.key_text == b.key_text:
                assert _apart(a, b), f"{path.stem}: key {a.key_text} checks two claims: {a.line} / {b.line}"


def _clashes(source: str) -> int:
    """How many pairs of checks in `source` share a key and may both record a verdict in one run."""
    sites = _sites(ast.parse(source))
    return sum(a.key_text == b.key_text and not _apart(a, b) for i, a in enumerate(sites) for b in sites[i + 1 :])


def test_the_uniqueness_rule_tells_a_second_claim_from_a_guard_or_an_else():
    assert _clashes('claims.between("a", x, key="k")\nclaims.near("b", y, z, 0.1, key="k")') == 1
    assert _clashes('if claims.needs_cpus(2, c, w, key="k"):\n    claims.between(c, x, key="k")') == 0
    # a guard that finds too few CPUs records the key itself: its else may not
    assert (
        _clashes('if claims.needs_cpus(2, c, w, key="k"):\n    pass\nelse:\n    claims.cannot_show(c, w, key="k")') == 1
    )
    assert _clashes('if ok:\n    claims.between(c, x, key="k")\nelse:\n    claims.cannot_show(c, w, key="k")') == 0
    assert _clashes('if ok:\n    claims.between(c, x, key="k")\nclaims.valid(c, r, key="k")') == 1
    assert _clashes('claims.between("a", x, key="k")\nclaims.near("b", y, z, 0.1, key="j")') == 0


def test_the_scan_sees_a_claim_check_without_a_key():
    (site,) = _sites(ast.parse('claims.between("async beats sync", x, low=2)'))
    assert site.key is None


def test_lesson_98s_cpu_bound_is_every_bound_named_for_a_gil_cores_or_a_cpu():
    # The claim read the bottleneck's words before it read the set: the set keeps what they selected.
    by_words = {b for b in Bottleneck if b.startswith(("GIL", "cores", "one core", "CPU"))}
    assert by_words == SERVER_OR_GENERATOR_CPU
    assert Bottleneck.CLIENT_CPU not in SERVER_OR_GENERATOR_CPU


@pytest.mark.parametrize("path", NOTEBOOKS_ALL, ids=[p.stem for p in NOTEBOOKS_ALL])
def test_no_lesson_reads_a_bottleneck_by_its_words(path):
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(ast.parse("".join(cell["source"]))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith":
                read = ast.unparse(node.func.value)
                assert "bottleneck" not in read and "status" not in read, f"{path.stem}: {ast.unparse(node)}"
