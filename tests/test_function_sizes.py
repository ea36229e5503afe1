"""No function in labserver/ or locustfiles/ over 60 lines, or with more than 6 parameters passed by position;
no module over 400 lines.

Past those sizes a function does several things, or its callers pass a row of values whose order
is the only thing that says what each one is; a module holds several concerns a reader opens apart.
"""

import ast

import pytest

from labserver.paths import ROOT

MAX_LINES = 60
MAX_POSITIONAL = 6
MAX_MODULE_LINES = 400
SOURCES = sorted([*(ROOT / "labserver").rglob("*.py"), *(ROOT / "locustfiles").glob("*.py")])


def sizes(source: str) -> list[tuple[str, int, int, int]]:
    """(name, line, length in lines, positional parameters) of every function in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = len(args.posonlyargs) + len(args.args)
            if args.args and args.args[0].arg in ("self", "cls"):
                positional -= 1
            found.append((node.name, node.lineno, node.end_lineno - node.lineno + 1, positional))
    return found


def test_the_measure_sees_long_functions_and_long_rows_of_arguments():
    long = "def f():\n" + "    x = 1\n" * MAX_LINES
    wide = "def g(" + ", ".join(f"a{i}" for i in range(MAX_POSITIONAL + 1)) + "): pass\n"
    keyword = "def h(a, *, " + ", ".join(f"a{i}" for i in range(20)) + "): pass\n"
    method = "class C:\n    def m(self, " + ", ".join(f"a{i}" for i in range(MAX_POSITIONAL)) + "): pass\n"
    assert [
        (n, length > MAX_LINES, p > MAX_POSITIONAL) for n, _, length, p in sizes(long + wide + keyword + method)
    ] == [
        ("f", True, False),
        ("g", False, True),
        ("h", False, False),
        ("m", False, False),
    ]


@pytest.mark.parametrize(
    "path",
    SOURCES,
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_functions_stay_short_with_few_positional_parameters(path):
    too_big = [
        f"{path.relative_to(ROOT)}:{line} {name}: {length} lines, {positional} positional parameters"
        for name, line, length, positional in sizes(path.read_text())
        if length > MAX_LINES or positional > MAX_POSITIONAL
    ]
    assert not too_big


def test_no_module_is_over_400_lines():
    assert SOURCES, "no module found: the measure would pass on nothing"
    long = {str(p.relative_to(ROOT)): n for p in SOURCES if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, long
