"""The checks every layer shares: one wording for a bad value, wherever it comes from.

A setting, a lesson's parameter, a load plan and a model's input all fail the same way: a
ValueError that names the parameter, its bounds or choices, and the value given. A string where
a number or a list goes also says how to pass one: papermill's `-p` hands lists over as text.
"""

from __future__ import annotations

import ast
import json
import math
import typing
from collections.abc import Iterable
from typing import TypeVar, cast

T = TypeVar("T")
S = TypeVar("S", bound=str)

# What a lesson's parameter of each kind is called in a message, and the value its example shows.
KINDS = {int: ("a whole number", 100), float: ("a number", 2.5), str: ("a string", "01")}
LIST_EXAMPLES = {int: [10, 30], float: [0.5, 2.0], str: ["01", "06"]}


def whole(name: str, value: object, low: int, high: int | None = None) -> int:
    """`value` if it is a whole number from `low` to `high` (no upper bound when None), else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"from {low} to {high}" if high is not None else f"of at least {low}"
        raise ValueError(f"{name} must be a whole number {bound}, got {value!r}{_how_to_pass(name, value, int, low)}")
    return value


def positive(name: str, value: object, unit: str = "") -> float:
    """`value` if it is a finite number above 0, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be more than 0{unit}, got {value!r}{_how_to_pass(name, value, float)}")
    return value


def choice(name: str, value: object, choices: Iterable[S]) -> S:
    """`value` if it is one of `choices` (typed as they are: a Literal's names), else ValueError listing them."""
    allowed = list(choices)
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; choose one of: {', '.join(allowed)}")
    return value


def parameter(name: str, value: object, kind: type[T], example: object = None) -> T:
    """A lesson's parameter as the lesson uses it; `kind` is int, float, list[int], list[float] or list[str].

    A lone value where a list goes is a list of one (`users = 50` means `[50]`). A string where a
    number or a list goes, a bool, or a list of the wrong things is a ValueError that says how to
    pass the value: papermill's `-p` passes "[10, 30]" as text, lists need `-y`. `example` is the
    value the message shows. Bounds are left to the checks that know them (whole, check_sweep).
    """
    if typing.get_origin(kind) is not list:
        if not _is(value, kind):
            raise ValueError(
                f"{name} must be {KINDS[kind][0]}, got {value!r}{_how_to_pass(name, value, kind, example)}"
            )
        return cast(T, value)  # _is checked it: a type held in a variable is beyond the type checker
    (item,) = typing.get_args(kind)
    if isinstance(value, tuple):
        value = list(value)
    if _is(value, item) and not (isinstance(value, str) and value.lstrip().startswith(("[", "("))):
        return cast(T, [value])
    if isinstance(value, list) and all(_is(x, item) for x in value):
        return cast(T, value)
    what = KINDS[item][0].removeprefix("a ")
    got = f"the string {value!r}" if isinstance(value, str) else repr(value)
    raise ValueError(f"{name} must be a list of {what}s, got {got}{_how_to_pass(name, value, kind, example)}")


def _is(value: object, kind: type) -> bool:
    """`value` is of `kind`; a bool is not a number here, and an int is a float."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int | float) if kind is float else isinstance(value, kind)


def _how_to_pass(name: str, value: object, kind: type, example: object = None) -> str:
    """How to write `name` on papermill's command line and in the parameters cell, when `value` is a string.

    A string where a number or list goes is papermill's `-p` or a quoted value in the notebook;
    the example is what the string meant when it reads as one, else `example`, else a stock value.
    """
    if not isinstance(value, str):
        return ""
    meant = _literal(value)
    if typing.get_origin(kind) is list:
        (item,) = typing.get_args(kind)
        meant = [meant] if _is(meant, item) else meant
        if not (isinstance(meant, list | tuple) and meant and all(_is(x, item) for x in meant)):
            meant = example if example is not None else LIST_EXAMPLES[item]
        meant = list(cast(list | tuple, meant))
        yaml = json.dumps(meant)  # JSON is YAML, and its double quotes sit inside the shell's single ones
        return f"; pass lists with papermill -y '{name}: {yaml}' or in the parameters cell as {name} = {meant!r}"
    if not _is(meant, kind):
        meant = example if example is not None else KINDS[kind][1]
    return f"; pass numbers with papermill -p {name} {meant!r} or in the parameters cell as {name} = {meant!r}"


def _literal(text: str) -> object:
    """What `text` reads as in Python ("[10, 30]" is a list), or None when it is no literal."""
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
