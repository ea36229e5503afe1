"""`make live`'s lessons: every lesson written with the live profile's values in, nothing run."""

import json

import pytest

from labserver.course import batch, classroom, profiles


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("live")
    return out, classroom.write(out)


def test_every_lesson_is_written_with_its_pages(written):
    out, notebooks = written
    assert [nb.name for nb in notebooks] == [nb.name for nb in batch.lessons()]
    assert all((out / page).is_file() for page in classroom.PAGES)


def test_the_live_values_are_in_and_nothing_ran(written):
    _, notebooks = written
    for path in notebooks:
        cells = json.loads(path.read_text())["cells"]
        assert not any(c.get("outputs") for c in cells if c["cell_type"] == "code"), path.name
        injected = [c for c in cells if "injected-parameters" in c["metadata"].get("tags", [])]
        live = profiles.parameters(path.stem, "live")
        if not live:
            continue
        (cell,) = injected
        source = "".join(cell["source"])
        namespace: dict = {}
        exec(source, namespace)  # the cell papermill wrote: assignments of literals only
        assert {k: namespace[k] for k in live} == live, path.name


def test_live_has_a_value_for_every_lesson():
    assert set(profiles.PROFILES) == {nb.stem for nb in batch.lessons()}
    for name in profiles.PROFILES:
        assert "live" in profiles.PROFILES[name]
