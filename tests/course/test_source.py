"""The code a lesson shows is the package's own: a pattern's source, and what changes between two."""

import labserver
from labserver import show_diff
from labserver.course import source
from labserver.demo.patterns import sequential


def test_show_diff_is_public():
    assert "show_diff" in labserver.__all__
    assert labserver.show_diff is source.show_diff


def test_a_diff_shows_what_changes_and_nothing_else():
    text = source.diff("threadpool", "blocking")
    assert text.splitlines()[:2] == [
        "--- threadpool.py · def (thread pool)",
        "+++ blocking.py · async def + time.sleep",
    ]
    assert "\n-def endpoint(work: Work = Depends(work_query)) -> dict:\n" in text
    assert "\n+async def endpoint(work: Work = Depends(work_query)) -> dict:\n" in text
    assert "from labserver.demo.params import reply, work_query" not in text  # the same in both: left out


def test_show_diff_highlights_a_diff_in_a_notebook_and_is_plain_text_outside():
    shown = show_diff("sequential", "gather")
    assert shown.language == "diff"
    assert repr(shown) == source.diff("sequential", "gather")  # what a console or a plain-text output shows
    assert "+    await asyncio.gather(" in repr(shown) and "-    for _ in range(work.tasks):" in repr(shown)
    assert 'class="gi"' in shown._repr_html_()  # a line added, highlighted


def test_a_diff_of_modules_or_functions_names_them():
    text = source.diff(sequential, sequential, context=0)
    assert text == ""  # nothing changes
    header = source.diff(sequential.endpoint, "gather").splitlines()[0]
    assert header == "--- labserver.demo.patterns.sequential.endpoint"


def test_an_endpoint_diff_shows_the_lines_a_reader_changes():
    text = source.diff("threadpool", "sequential", endpoint=True)
    assert text.splitlines()[:2] == ["--- threadpool.py · def (thread pool)", "+++ sequential.py · async def + await"]
    changed = [line for line in text.splitlines()[2:] if line[:1] in "+-" and not line.startswith("@@")]
    assert "-def endpoint(work: Work = Depends(work_query)) -> dict:" in changed
    assert "+async def endpoint(work: Work = Depends(work_query)) -> dict:" in changed
    assert not any("TRAITS" in line or "import" in line or "Teaches" in line for line in changed)
    assert len(changed) <= 8  # def → async def, the wait, and the lines that name the pattern
