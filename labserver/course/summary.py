"""The course in one table (lesson 99): every run on disk against the model, and the articles' headlines beside ours.

Nothing here measures or starts a server: it reads the runs that lessons left under
data/runs/ (`load_runs`). `headlines` takes each article's headline ratio (`published.HEADLINES`)
from our runs, on the runs nearest to the article's own setting.
"""

from __future__ import annotations

import math

import pandas as pd

from labserver.theory.published import HEADLINES, Article, Headline

GOOD = 0.25  # a run within ±25% of its prediction counts as explained by the model
CLOSE = 1.5  # a headline of ours within 1.5× of the article's, either way, counts as carried over


def _lesson(runs: pd.DataFrame, prefix: str) -> pd.DataFrame:
    return runs[runs["lesson"].fillna("").astype(str).str.startswith(prefix)] if "lesson" in runs else runs.iloc[0:0]


def _nearest(values: pd.Series, target: float) -> float:
    """The value closest to `target`, on a log scale for positive numbers (users 80 is nearer 100 than 160 is)."""
    values = values.dropna().unique()
    if target > 0 and all(v > 0 for v in values):
        return min(values, key=lambda v: abs(math.log(v / target)))
    return min(values, key=lambda v: abs(v - target))


def select(runs: pd.DataFrame, where: dict, near: dict) -> pd.DataFrame:
    """The valid runs matching `where`, then those nearest to `near` on every column `where` leaves free."""
    rows = runs[runs["valid"].astype(bool)] if "valid" in runs else runs
    for key, value in where.items():
        if key not in rows:
            rows = rows.iloc[0:0]
            continue
        column = rows[key].fillna("") if isinstance(value, str) else rows[key]  # "" (unset) may read back as NaN
        rows = rows[column == value]
    for key, target in near.items():
        if key in rows and key not in where and rows[key].notna().any():
            rows = rows[rows[key] == _nearest(rows[key], target)]
    return rows


def headlines(
    runs: pd.DataFrame, published: list[Headline] | None = None, article: Article | None = None
) -> pd.DataFrame:
    """Each published headline (`article`'s only, if given) beside the same ratio from our runs, NaN where none."""
    out = []
    for h in published or HEADLINES:
        if article is not None and h.article != article:
            continue
        mine = _lesson(runs, h.lesson)
        top = select(mine, h.numerator, h.near)
        bottom = select(mine, h.denominator, h.near) if h.denominator is not None else None
        ours, note = math.nan, ""
        if mine.empty:
            note = f"no runs of lesson {h.lesson} on disk"
        elif h.column not in mine or top.empty or (bottom is not None and bottom.empty):
            note = f"lesson {h.lesson} has no valid runs of this kind"
        else:
            ours = float(top[h.column].median())
            if bottom is not None:
                ours /= float(bottom[h.column].median())
            note = ", ".join(f"{k} {top[k].iloc[0]:g}" for k in h.near if k in top and k not in h.numerator)
        out.append(
            {
                "article": h.article.short,
                "lesson": h.lesson,
                "what": h.what,
                "published": h.published,
                "ours": ours,
                "ours / published": ours / h.published,
                "our setting": note,
                "its figures": h.source,
            }
        )
    return pd.DataFrame(out)


def patterns(runs: pd.DataFrame) -> pd.DataFrame:
    """Each lesson × pattern (× client, for lesson 06): how its valid runs compare with the model."""
    cols = [
        "lesson", "pattern", "client", "runs", "valid", "median ratio", "lowest", "highest", "within ±25%",
        "median before",
    ]  # fmt: skip
    if runs.empty or "ratio" not in runs:
        return pd.DataFrame(columns=cols)
    frame = runs.assign(
        client=runs["client"].fillna("") if "client" in runs else "",
        ok=runs["valid"].astype(bool),
        lesson=runs["lesson"].fillna("(no lesson)"),
        pattern=runs["pattern"].fillna("?"),
    )
    frame["ratio"] = pd.to_numeric(frame["ratio"], errors="coerce")
    # measured / predicted before the run (harness/load/pricing.py); runs saved before it, and client runs, have none
    frame["before"] = pd.to_numeric(frame["ratio_before"], errors="coerce") if "ratio_before" in frame else math.nan
    rows = []
    for (lesson, pattern, client), group in frame.groupby(["lesson", "pattern", "client"], sort=True):
        ratios = group.loc[group["ok"], "ratio"].dropna()
        rows.append(
            {
                "lesson": lesson,
                "pattern": pattern,
                "client": client,
                "runs": len(group),
                "valid": int(group["ok"].sum()),
                "median ratio": ratios.median(),
                "lowest": ratios.min(),
                "highest": ratios.max(),
                "within ±25%": ((ratios - 1).abs() <= GOOD).mean(),
                "median before": group.loc[group["ok"], "before"].dropna().median(),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def valid_ratios(runs: pd.DataFrame) -> pd.Series:
    """measured / predicted of every valid run that has a prediction."""
    if runs.empty or "ratio" not in runs:
        return pd.Series(dtype=float)
    return pd.to_numeric(runs.loc[runs["valid"].astype(bool), "ratio"], errors="coerce").dropna()


def before_ratios(runs: pd.DataFrame) -> pd.Series:
    """measured / predicted before it, of every run the per-lesson table counts (fidelity.table): valid, explained
    after, predicted before, and not disturbed by other programs."""
    if runs.empty or "ratio" not in runs or "ratio_before" not in runs:
        return pd.Series(dtype=float)
    counted = runs["valid"].astype(bool) & pd.to_numeric(runs["ratio"], errors="coerce").notna()
    if "disturbed" in runs:
        counted &= ~runs["disturbed"].eq(True)
    return pd.to_numeric(runs.loc[counted, "ratio_before"], errors="coerce").dropna()


def overview(runs: pd.DataFrame, where: str = "") -> str:
    """One sentence on what is on disk, or what to do when nothing is."""
    if runs.empty:
        return (
            f"No runs on disk{f' in {where}' if where else ''}: there is nothing to summarise yet. Run the lessons "
            "first (`make figures` runs them all, or open any lesson and run it), then re-run this notebook."
        )
    lessons = runs["lesson"].fillna("(no lesson)").value_counts().sort_index() if "lesson" in runs else pd.Series()
    each = ", ".join(f"{name} ({n})" for name, n in lessons.items())
    valid = int(runs["valid"].astype(bool).sum()) if "valid" in runs else len(runs)
    return f"{len(runs)} runs on disk{f' in {where}' if where else ''}, {valid} of them valid, from: {each}."


def lesson_runs(runs: pd.DataFrame, prefixes: list[str] | tuple[str, ...] = ()) -> pd.DataFrame:
    """The runs that belong to a lesson (to one of `prefixes`, if given): a run made by hand has no lesson."""
    if runs.empty or "lesson" not in runs:
        return runs.iloc[0:0]
    named = runs[runs["lesson"].notna() & (runs["lesson"].astype(str) != "")]
    return named[named["lesson"].astype(str).str.startswith(tuple(prefixes))] if prefixes else named


def title(
    ratios: pd.Series,
    medians: pd.Series,
    heads: pd.DataFrame,
    *,
    within: float = GOOD,
    against: str = "the model, explained after each run",
) -> str:
    """Lesson 99's finding: the share of valid runs within `within` of the model, and how many headlines carried over.

    `ratios` is every valid run's measured / predicted (`valid_ratios`; or before it, `before_ratios`, with
    `against` saying so), `medians` each lesson × pattern's median of them (`patterns`), `heads` the table of
    `headlines`.
    """
    shown = heads.dropna(subset=["ours"])
    near = ((ratios - 1).abs() <= within).mean()
    close = ((shown["ours / published"] > 1 / CLOSE) & (shown["ours / published"] < CLOSE)).sum()
    return (
        f"{near:.0%} of {len(ratios)} valid runs land within ±{within:.0%} of {against} "
        f"(median of the experiments "
        f"{medians.median():.2f});\n{close} of {len(shown)} headlines come out within {CLOSE:g}× of the published ones"
    )
