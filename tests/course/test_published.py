"""The five articles are named once: a record each in published.py, as notebooks/articles.md lists them."""

import dataclasses
import json
import re

from labserver.paths import NOTEBOOKS, ROOT
from labserver.theory import published

# "seed 001", "Seed 000's", "seeds 002, 001": the source files' numbers, which name no article for a reader.
SEED = re.compile(r"\bseeds? 0\d\d\b|\bSEED_0\d\d", re.IGNORECASE)
# Modules other engineers are rewriting (issue 36) still say "seed 00N" in a comment; the test fails
# once one no longer does, so that its entry goes too.
PENDING = {"labserver/theory/model.py", "labserver/clients/runs.py"}


def test_every_article_is_listed_as_its_record_says():
    text = (NOTEBOOKS / "articles.md").read_text()
    listed = text.replace("*", "").replace("`", "")
    for article in published.ARTICLES:
        for field, value in dataclasses.asdict(article).items():
            assert value is None or value in listed, f"{article.short}: its {field} {value!r} is not in articles.md"
    records = [name for name, value in vars(published).items() if isinstance(value, published.Article)]
    assert len(records) == len(published.ARTICLES) == 5
    for name in records:
        assert f"(`{name}`)" in text, f"articles.md does not say which row is published.{name}"


def test_every_article_has_a_headline_and_a_headline_names_its_article():
    assert {h.article for h in published.HEADLINES} == set(published.ARTICLES)


def _seeds(text: str) -> list[str]:
    return [text[max(0, m.start() - 30) : m.end() + 10] for m in SEED.finditer(text)]


def test_code_and_lessons_name_an_article_by_its_short_name():
    found = {}
    for path in [*(ROOT / "labserver").rglob("*.py"), *NOTEBOOKS.glob("*.md")]:
        found[path.relative_to(ROOT).as_posix()] = _seeds(path.read_text())
    for path in NOTEBOOKS.glob("*.ipynb"):
        cells = json.loads(path.read_text())["cells"]
        found[path.relative_to(ROOT).as_posix()] = _seeds("\n".join("".join(c["source"]) for c in cells))
    stray = {path: seen for path, seen in found.items() if seen and path not in PENDING}
    assert not stray, f"name the article (labserver/theory/published.py, notebooks/articles.md): {stray}"
    gone = {path for path in PENDING if not found.get(path)}
    assert not gone, f"no longer say 'seed 00N': take them out of PENDING: {gone}"


def test_beside_workers_sets_the_articles_ratios_beside_lesson_04s():
    import pandas as pd

    table = published.beside_workers(pd.Series({1: 1000.0, 2: 1100.0, 3: 1200.0}), gain=1.8)
    assert list(table.columns) == ["figure", "article", "ours"]
    assert list(table["ours"]) == [1.1, 1.2, 1.8]  # 2 workers / 1, the most / 1, the CPU-bound gain
    assert table["article"].iloc[0] == round(1275.48 / 1031.05, 3)
    assert table["article"].iloc[1] == round(7637.52 / 2044.48, 3)
    assert table["article"].isna().iloc[2]  # the article gave no req/s
    without_two = published.beside_workers(pd.Series({1: 1000.0, 3: 1200.0}), gain=1.8)
    assert without_two["ours"].isna().iloc[0]  # no run of 2 workers: nothing to set beside horaceg's


def test_beside_database_sets_carlos_penas_figures_beside_lesson_07s():
    import math

    import pandas as pd

    table = published.beside_database(1.4, 1.2, 1.5, pd.Series({15: 1.3, 28: 1.1}), converged=None)
    assert list(table.columns) == ["figure", "Carlos Pena", "this machine"]
    nowhere = "no depth from which they stay within 15% (to fib(28))"  # said, not NaN
    assert table["this machine"].tolist() == [1.4, 1.2, 1.5, 1.3, nowhere]
    assert table["Carlos Pena"].iloc[0] == round(2007.86 / 1123.60, 2)  # to two places, as the lesson shows it
    assert table["Carlos Pena"].iloc[3] == round(940.16 / 648.88, 2)  # its FIB sweep at 15, our shallowest depth
    assert table["figure"].iloc[3] == "sweep: async / sync at fib(15)"
    assert table["Carlos Pena"].iloc[4] == "between 25 and 30"
    assert table["Carlos Pena"].iloc[1] == published.NOT_RUN  # said in words, not None
    at_10 = published.beside_database(1.4, float("nan"), 1.5, pd.Series({10: 1.3, 15: 1.1}), converged=15)
    assert math.isnan(at_10["Carlos Pena"].iloc[3])  # the article ran no FIB of 10
