"""Names as a learner reads them: one label per pattern and per client strategy, and no two alike."""

from pathlib import Path

from labserver.clients.strategies import STRATEGIES
from labserver.demo.patterns import PATTERNS
from labserver.labels import CLIENT_LABELS, PATTERN_LABELS, client_label, pattern_label, work_label
from labserver.paths import ROOT


def test_every_pattern_module_has_a_label():
    modules = {path.stem for path in Path(ROOT, "labserver", "demo", "patterns").glob("*.py")} - {"__init__"}
    assert set(PATTERN_LABELS) == modules == set(PATTERNS)


def test_every_client_strategy_has_a_label():
    assert set(CLIENT_LABELS) == set(STRATEGIES)


def test_labels_are_unique_and_no_word_names_both_a_client_and_an_endpoint():
    labels = [*PATTERN_LABELS.values(), *CLIENT_LABELS.values()]
    assert len(set(labels)) == len(labels)
    # lesson 06 puts a client beside an endpoint: a label is never the other kind's short name either
    assert not set(PATTERN_LABELS.values()) & set(CLIENT_LABELS)
    assert not set(CLIENT_LABELS.values()) & set(PATTERN_LABELS)


def test_a_name_is_looked_up_and_an_unknown_one_shown_as_given():
    assert pattern_label("threadpool") == "def (thread pool)"
    assert client_label("threadpool") == "requests in a client thread pool"
    assert pattern_label("fib + sleep") == "fib + sleep"
    assert client_label("fast") == "fast"


def test_a_run_s_work_is_named_in_a_few_characters():
    assert work_label(1, 0, 25) == "fib(25)"
    assert work_label(4, 200, 0) == "4×200 ms"
    assert work_label(1, 100, 15) == "fib(15) + 100 ms"
    assert work_label(float("nan"), float("nan"), float("nan")) == "no work"  # a row without them
