"""No input in a page's URL makes a 500: every parameter any page reads, fed Unicode digits,
huge numbers, non-finite numbers and stray characters, answers 200 or 422 (issue 27's
property), as a whole page and as a live fragment."""

from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.routes import PAGE_STATE, PAGES

# Text that looks like a number to a person, or to Python's int()/float(), but not to the
# app's one rule (app/web/pages.py: ASCII digits, bounded length).
HOSTILE = [
    "٣",  # Arabic-Indic three
    "３",  # full-width three
    "²",
    "½",
    "१२",  # Devanagari twelve
    "9" * 40,
    "-" + "9" * 40,
    "1e309",
    "-1e999",
    "nan",
    "inf",
    "-Infinity",
    "1_000",
    "0x10",
    "12abc",
    "1,5",
    " ",
    "",
    "\x00",
    "🙂",
    "[[1,2],[3]]",
    "1;2;;3",
    "-",
    ".",
]
EVERY_NAME = sorted({name for names in PAGE_STATE.values() for name in names} - {"fragment"})
ACCEPTED = {200, 422}


def status(client: TestClient, path: str, pairs: list[tuple[str, str]]) -> int:
    return client.get(f"{path}?{urlencode(pairs)}").status_code


@pytest.mark.parametrize("path", PAGES)
@pytest.mark.parametrize("value", HOSTILE)
def test_every_parameter_at_once_with_one_hostile_value(
    client: TestClient, path: str, value: str
) -> None:
    pairs = [(name, value) for name in EVERY_NAME]
    assert status(client, path, pairs) in ACCEPTED
    assert status(client, path, [*pairs, ("fragment", "1")]) == 200  # the status in a header


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=True,
)
@given(
    path=st.sampled_from(PAGES),
    pairs=st.lists(
        st.tuples(
            st.sampled_from(EVERY_NAME),
            st.sampled_from(HOSTILE) | st.text(max_size=12) | st.integers().map(str),
        ),
        max_size=8,
    ),
)
def test_any_mix_of_parameters_and_values(
    client: TestClient, path: str, pairs: list[tuple[str, str]]
) -> None:
    assert status(client, path, pairs) in ACCEPTED
