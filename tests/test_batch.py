import pytest

from labserver import batch
from labserver.paths import NOTEBOOKS


def test_lessons_are_the_numbered_notebooks_in_order():
    found = batch.lessons()
    assert found == sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    assert [nb.stem for nb in found][:2] == ["00_start_here", "01_async_vs_sync"]


def test_lessons_by_prefix():
    assert [nb.stem for nb in batch.lessons(["01"])] == ["01_async_vs_sync"]
    assert [nb.stem for nb in batch.lessons(["00_start", "01"])] == ["00_start_here", "01_async_vs_sync"]


def test_unknown_lesson_lists_the_lessons():
    with pytest.raises(SystemExit, match="00_start_here"):
        batch.lessons(["42"])


def test_unknown_profile_is_refused(capsys):
    with pytest.raises(SystemExit):
        batch.main(["--profile", "huge"])
    assert "invalid choice" in capsys.readouterr().err
