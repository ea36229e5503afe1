"""Code says what is true now: no docstring or comment of labserver/ or locustfiles/ keeps a number's history.

What a figure read, in which batch, on which machine, is evidence for maintainers: it lives in
docs/evidence.md ("Evidence behind the code"), and the comment keeps the reason and points there.
The lessons' list (tests/course/test_prose.py's HISTORY) flags every "steal" and "repeat", but the
code names steal time's meter and the batch's `--repeat` option; so here steal time, a batch or a
VM are history only beside a reading.
"""

import ast
import io
import re
import tokenize

import pytest

from labserver.paths import ROOT

SOURCES = sorted([*(ROOT / "labserver").rglob("*.py"), *(ROOT / "locustfiles").glob("*.py")])
COUNT = r"(\d[\d,]*|two|three|four|five|six|seven|eight|nine|ten|eleven)"
HISTORY = re.compile(
    "|".join(
        [
            r"\bused to (read|say)\b",
            rf"\b(in|over|across) (the )?{COUNT} batches\b",
            r"\bover (the )?\d[\d,]* (runs|batches)\b",
            r"\bbatch(es)?\b.{0,60}\bread \d",  # "in one batch, runs that lost ... read 0.84"
            r"\bruns? read \d",
            r"\bread \d+(\.\d+)?\s*(-|–|to|and)\s*\d",  # a range read: "read 0.93-0.95"
            r"\b\d*\.\d+\s*(-|–|->|→)\s*\d*\.\d+ of (the|its|their) (model|prediction)\b",
            r"\b(on|of) (the|this) (\d+-core )?VM\b|\b\d+-core VM\b",
            r"\bsteal\b.{0,60}\bread \d",
            r"\bkept \d*\.\d+.{0,20}\bof (the|its|their) cores?\b",  # "kept 0.85-0.96 of the core busy"
            r"\b(took|drew) (about |~)?\d",  # past readings: "took 9-19%", "drew 6% too many"
            r"\blesson \d\d('s)?\b.{0,20}\bsaw\b",  # "lesson 06 saw its first reply at 77-80 ms"
            r"\d\s*(ms|s|%) here\b",  # "20-80 ms here"
            r"\d[^()]*, measured\)",  # "(0.5% of a core, measured)"
            r"\bthis session\b|\bcommit [0-9a-f]{7}",
        ]
    ),
    re.IGNORECASE,
)


def _blocks(source: str) -> list[list[tuple[int, str]]]:
    """Each docstring, and each run of comments on consecutive lines, as its (line, text) pairs."""
    blocks: list[list[tuple[int, str]]] = []
    last = -1
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            line = (tok.start[0], tok.string.lstrip("#").strip())
            if blocks and tok.start[0] == last + 1:
                blocks[-1].append(line)
            else:
                blocks.append([line])
            last = tok.start[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = node.body[0].value if node.body and isinstance(node.body[0], ast.Expr) else None
            if isinstance(doc, ast.Constant) and isinstance(doc.value, str):
                blocks.append([(doc.lineno + i, text.strip()) for i, text in enumerate(doc.value.splitlines())])
    return blocks


def history(source: str) -> list[tuple[int, str]]:
    """(line, phrase) for each history phrase in the comments and docstrings of `source`.

    A block is read as one text, so that a phrase broken over two lines is still found."""
    found = []
    for block in _blocks(source):
        text, starts = "", []
        for line, part in block:
            starts.append((len(text), line))
            text += part + " "
        for m in HISTORY.finditer(text):
            line = max(ln for at, ln in starts if at <= m.start())
            found.append((line, text[max(0, m.start() - 30) : m.end() + 20].strip()))
    return sorted(found)


@pytest.mark.parametrize(
    "text",
    [
        "# (in one batch, runs that lost 0.1-0.6 of a core read 0.84 to 0.99 of their prediction)",
        "# over the 500 runs of five batches, its latest wake was 56 ms late",
        "# on the 2-core\n# VM, aiohttp's waves spread",
        "# the wall jumped by 2.5 S at that edge, and two runs read 1.56-1.58",
        "# it used to read 0.93",
        "# 0.95-0.99 in five batches",
        "# (`make bench`: 0.926 -> 0.888 of the model at 400 users)",
        "# lesson 06 saw its first reply from 40 threads at 77-80 ms, not 50",
        "# A full garbage collection walks every object: 20-80 ms here",
        "# it takes next to no CPU (0.5% of a core, measured).",
        '"""Where a wake is late.\n\nIts latest wake read 0.80 and 0.88 of the model."""',
    ],
)
def test_history_is_recognised(text):
    assert history(text)


@pytest.mark.parametrize(
    "text",
    [
        "# stopping it: steal time (/proc/stat). Each run records it (`stolen_cpu`)",
        "# cores the host took for others (steal time), within machine_cpu",
        "# A quiet host takes well under 1%; one busy with other guests takes a tenth or more",
        '"""On a machine whose cores compute slower (a laptop\'s turbo, a VM\'s shared host)."""',
        '"""`--repeat N` runs the whole batch N times: which claims are robust on this machine."""',
        '"""The batch as `make figures` runs it, timed; runs read back from disk."""',
        '"""The spread is the measured value\'s standard deviation over the batches."""',
        '"""Locust\'s own CPU warning comes from a sample taken every 10 s that reads 0 the first time."""',
        "# the batch's wall time is the longest of its waves (docs/evidence.md)",
        "x = 1  # 10 ms: the watcher's tick",
    ],
)
def test_present_tense_reasons_are_not_history(text):
    assert not history(text)


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(ROOT)) for p in SOURCES])
def test_no_history_in_code(path):
    found = history(path.read_text())
    where = "\n".join(f"{path.relative_to(ROOT)}:{line}: {phrase}" for line, phrase in found)
    assert not found, f"a number's history belongs in docs/evidence.md, not in the code:\n{where}"
