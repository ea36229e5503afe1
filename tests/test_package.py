"""The package's front door: every name `__all__` lists is one `labserver` gives, and no other."""

import pytest

import labserver


def test_all_lists_exactly_the_names_the_package_imports_on_first_use():
    assert sorted(labserver.__all__) == sorted(labserver._WHERE)


@pytest.mark.parametrize("name", labserver.__all__)
def test_each_listed_name_resolves_to_its_module_s_object(name):
    obj = getattr(labserver, name)
    assert getattr(obj, "__module__", labserver._WHERE[name]).startswith("labserver.")


def test_an_unlisted_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        labserver.nothing  # noqa: B018
