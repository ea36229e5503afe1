"""Lesson 02 sets the Locust gather article's table beside its own runs, each against the same model."""

import pandas as pd

from labserver.theory import published

OURS = pd.DataFrame({
    "pattern": ["threadpool", "sequential", "dependent", "gather"], "users": [100] * 4, "workers": [2] * 4,
    "tasks": [3] * 4, "io_ms": [200] * 4, "rps": [133.0, 166.0, 165.0, 498.0], "ratio": [1.0, 0.99, 0.99, 0.99],
})  # fmt: skip


def test_a_claims_detail_sets_our_ratio_beside_the_articles():
    assert published.gather_detail(OURS, "gather", "sequential") == "498 / 166; article 97.33 / 32.24 = 3.02"
    assert published.gather_detail(OURS, "dependent", "sequential") == "165 / 166; article 32.25 / 32.24 = 1.00"


def test_both_tables_sit_in_one_frame_that_names_each_setting():
    article = pd.DataFrame({"pattern": ["gather"], "rps": [97.33], "ratio": [0.97]})
    both = published.beside_gather(article, OURS)
    assert len(both) == 5
    assert set(both["source"]) == {
        "the Locust gather article: 2 workers, 500 users, 3 × 5 s",
        "this machine: 2 workers, 100 users, 3 × 200 ms",
    }
    assert "source" not in OURS  # the runs themselves are left as they were
