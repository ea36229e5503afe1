"""The code a lesson shows is the code that runs: displayed from the package, never copied by hand."""

from __future__ import annotations

import inspect
from pathlib import Path

from IPython.display import Code

from labserver.demo.patterns import PATTERNS, check_pattern

PACKAGE = Path(__file__).resolve().parent.parent


def source(what) -> str:
    """The source of `what`: a pattern's name (its whole module), a module, a function or a class."""
    if isinstance(what, str):
        check_pattern(what)
        return inspect.getsource(inspect.getmodule(PATTERNS[what]))
    return inspect.getsource(what)


def show_source(what) -> Code:
    """`what`'s source (see `source`), highlighted as Python in JupyterLab and in executed copies."""
    return Code(source(what), language="python")
