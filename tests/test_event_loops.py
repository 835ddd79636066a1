"""Tests start event loops through tests.aio.run_async: a plain asyncio.run fails whenever a
browser test has run before it in the same pytest worker (Playwright holds that thread's loop),
which only some orders of the suite show."""

import re

from app import ROOT

PLAIN_RUN = re.compile(r"\basyncio\.run\(")


def test_tests_run_coroutines_through_run_async() -> None:
    callers = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if path.name != "aio.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if PLAIN_RUN.search(line)
    ]
    assert callers == []
