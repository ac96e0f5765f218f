"""--seeds parsing: a list of distinct integers, and a typo is refused rather than read."""
import pytest

from bertkit.errors import BertkitError
from bertkit.tasks.driver import parse_seeds


@pytest.mark.parametrize("given, seeds", [("1, 2,3", [1, 2, 3]), ("[4,5]", [4, 5]), (7, [7]),
                                          ([1, 2], [1, 2]), (None, []), ("", [])])
def test_seeds_are_read(given, seeds):
    assert parse_seeds(given) == seeds


@pytest.mark.parametrize("given, match", [("1,,2", "an empty item"), ("1,2,", "an empty item"),
                                          ("1,x", "integers separated"), ("1,1", "distinct")])
def test_a_typo_in_seeds_is_refused(given, match):
    with pytest.raises(BertkitError, match=match):
        parse_seeds(given)
