"""A lesson's entry in the registry (labserver/lessons/__init__.py): its notebook, its parameters, its chart."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_CHART = "throughput.png"  # most lessons' headline chart


@dataclass(frozen=True)
class Lesson:
    """One notebook's own settings, beside the code its module holds for it."""

    slug: str  # its notebook's name: 03_cpu_bound for notebooks/03_cpu_bound.ipynb
    # the parameters each run profile sets (course/profiles.py): `quick` is the notebook's own values, `live` an
    # instructor's, every run cell in about 20 s, `full` nearer the articles' scale, `smoke` the tests' tiny run
    profiles: Mapping[str, Mapping[str, Any]]
    chart: str = DEFAULT_CHART  # the chart the README's lesson map shows (course/reference.py)

    @property
    def module(self) -> str:
        """The name of its module in labserver/lessons/: the slug without its number."""
        return self.slug.split("_", 1)[1]
