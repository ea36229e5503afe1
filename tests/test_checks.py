"""The one validator: a bad value fails with its name, what was expected and what was given."""

import pytest

from labserver import checks


def test_parameter_takes_a_lone_value_where_a_list_goes_as_a_list_of_one():
    # `users = 50` in the parameters cell, or papermill -p users 50 (which passes an int)
    assert checks.parameter("users", 50, list[int]) == [50]
    assert checks.parameter("lessons", "01", list[str]) == ["01"]
    assert checks.parameter("timeouts", 2, list[float]) == [2]


def test_parameter_leaves_a_list_as_it_is():
    users = [10, 30]
    assert checks.parameter("users", users, list[int]) is users
    assert checks.parameter("users", (10, 30), list[int]) == [10, 30]
    assert checks.parameter("lessons", [], list[str]) == []
    assert checks.parameter("io_ms", 100, int) == 100
    assert checks.parameter("timeout_s", 2, float) == 2


def test_a_list_passed_as_text_says_to_use_papermills_yaml_option():
    # papermill -p users "[10, 30]" hands the notebook the string "[10, 30]"
    with pytest.raises(ValueError) as error:
        checks.parameter("users", "[10, 30]", list[int])
    assert str(error.value) == (
        "users must be a list of whole numbers, got the string '[10, 30]'; pass lists with "
        "papermill -y 'users: [10, 30]' or in the parameters cell as users = [10, 30]"
    )


def test_a_number_written_as_text_where_a_list_goes_says_how_to_write_the_list():
    with pytest.raises(ValueError, match=r"^users must be a list of whole numbers, got the string '50'; ") as error:
        checks.parameter("users", "50", list[int])
    assert "papermill -y 'users: [50]'" in str(error.value)
    assert "users = [50]" in str(error.value)


def test_a_list_of_names_passed_as_text_is_shown_in_yaml_the_shell_can_quote():
    with pytest.raises(ValueError) as error:
        checks.parameter("lessons", "['01', '06']", list[str])
    assert """papermill -y 'lessons: ["01", "06"]'""" in str(error.value)


def test_text_that_is_no_list_gets_a_stock_example():
    with pytest.raises(ValueError, match=r"papermill -y 'users: \[10, 30\]'"):
        checks.parameter("users", "fifty", list[int])
    with pytest.raises(ValueError, match=r"papermill -y 'users: \[20\]'"):
        checks.parameter("users", "twenty", list[int], example=[20])


@pytest.mark.parametrize("value", [True, [10, True], [10, "30"], None, 2.5, {"users": 10}])
def test_parameter_rejects_what_is_no_list_of_whole_numbers(value):
    with pytest.raises(ValueError, match=r"^users must be a list of whole numbers, got "):
        checks.parameter("users", value, list[int])


def test_a_bool_is_no_number():
    with pytest.raises(ValueError, match=r"^io_ms must be a whole number, got True$"):
        checks.parameter("io_ms", True, int)
    with pytest.raises(ValueError, match=r"^timeout_s must be a number, got False$"):
        checks.parameter("timeout_s", False, float)


def test_a_number_passed_as_text_says_how_to_pass_a_number():
    with pytest.raises(ValueError) as error:
        checks.parameter("io_ms", "100", int)
    assert str(error.value) == (
        "io_ms must be a whole number, got '100'; pass numbers with papermill -p io_ms 100 "
        "or in the parameters cell as io_ms = 100"
    )


def test_whole_and_positive_say_how_to_pass_a_number_given_as_text():
    with pytest.raises(ValueError, match=r"^duration_s must be .* from 1 to 600, got '5'; .* duration_s = 5$"):
        checks.whole("duration_s", "5", 1, 600)
    with pytest.raises(ValueError, match=r"^rounds must be .* got 'x'; pass numbers with papermill -p rounds 1 "):
        checks.whole("rounds", "x", 1, 5)  # no number in the text: the example is the lowest allowed
    with pytest.raises(ValueError, match=r"^timeout_s must be more than 0 s, got '2.0'; .* timeout_s = 2.0$"):
        checks.positive("timeout_s", "2.0", " s")


def test_whole_says_nothing_of_papermill_for_a_number_out_of_bounds():
    with pytest.raises(ValueError) as error:
        checks.whole("threads", 0, 1, 1000)
    assert str(error.value) == "threads must be a whole number from 1 to 1000, got 0"
