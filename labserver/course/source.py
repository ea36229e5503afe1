"""The code a lesson shows is the code that runs: displayed from the package, never copied by hand."""

from __future__ import annotations

import difflib
import inspect
import sys
from pathlib import Path

from IPython.display import Code

from labserver.demo.patterns import PATTERNS, check_pattern
from labserver.labels import pattern_label

PACKAGE = Path(__file__).resolve().parent.parent


def source(what) -> str:
    """The source of `what`: a pattern's name (its whole module), a module, a function or a class."""
    if isinstance(what, str):
        check_pattern(what)
        return inspect.getsource(sys.modules[PATTERNS[what].__module__])
    return inspect.getsource(what)


def show_source(what) -> Code:
    """`what`'s source (see `source`), highlighted as Python in JupyterLab and in executed copies."""
    return Code(source(what), language="python")


def diff(a, b, *, context: int = 1, endpoint: bool = False) -> str:
    """What changes from `a`'s source to `b`'s (see `source`), as a unified diff headed by each one's label.

    `endpoint=True` compares two patterns' endpoint functions alone: the lines a reader changes in
    their own endpoint, without the modules' docstrings, imports and traits.
    """
    a_text, b_text = (inspect.getsource(PATTERNS[check_pattern(x)]) if endpoint else source(x) for x in (a, b))
    lines = difflib.unified_diff(
        a_text.splitlines(keepends=True),
        b_text.splitlines(keepends=True),
        fromfile=_heading(a),
        tofile=_heading(b),
        n=context,
    )
    return "".join(lines)


def show_diff(a, b, *, context: int = 1, endpoint: bool = False) -> Code:
    """Only what changes between two patterns (or modules, functions): a highlighted diff, plain text outside Jupyter.

    `context` is the number of unchanged lines kept around each change, so that a change reads in its place;
    `endpoint=True` compares two patterns' endpoint functions alone (see `diff`).
    """
    return Code(diff(a, b, context=context, endpoint=endpoint), language="diff")


def _heading(what) -> str:
    if isinstance(what, str):
        return f"{what}.py · {pattern_label(what)}"
    name = getattr(what, "__qualname__", None)  # a function's or a class's; a module has only its __name__
    return f"{what.__module__}.{name}" if name else what.__name__
