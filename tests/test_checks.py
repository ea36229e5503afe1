"""The one validator: a bad value fails with its name, what was expected and what was given."""

import pytest

from labserver import checks


def test_strings_accepts_a_list_of_strings_and_returns_it():
    assert checks.strings("lessons", ["01", "06"]) == ["01", "06"]
    assert checks.strings("lessons", []) == []


@pytest.mark.parametrize("value", ["01", ["01", 6], ("01",), None])
def test_strings_says_what_a_bad_value_should_be(value):
    with pytest.raises(ValueError, match=r"^lessons must be a list of lesson name prefixes such as \['01'\], got "):
        checks.strings("lessons", value, "lesson name prefixes such as ['01']")
