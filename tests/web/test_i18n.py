"""Translations: every extracted string has Spanish, pages speak the reader's language, and
concurrent readers in different languages never see each other's words."""

import asyncio
import math
import re

import httpx
import numpy as np
import pytest
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.frontend import parse_mapping_cfg

from app import ROOT
from app.core.i18n import (
    LOCALES,
    accepted_locales,
    catalog,
    format_number,
    format_numbers,
    format_rows,
    format_vector,
    format_vectors,
    gettext,
    negotiate,
    use_locale,
)
from app.main import create_app
from app.web.nav import NAV
from tests.aio import run_async


def extracted_messages() -> set[str]:
    """What `make messages` (pybabel extract -F babel.cfg) finds, extracted in-process."""
    with (ROOT / "babel.cfg").open() as cfg:
        method_map, options_map = parse_mapping_cfg(cfg)
    found = extract_from_dir(ROOT, method_map, options_map, keywords=DEFAULT_KEYWORDS)
    ids = set()
    for _filename, _lineno, message, _comments, _context in found:
        # A plural (ngettext) is one catalog entry, under its singular.
        ids.add(message[0] if isinstance(message, tuple) else message)
    return {m for m in ids if m}


@pytest.fixture(scope="module")
def spanish():
    return catalog("es")


def test_extraction_finds_the_templates_and_the_app() -> None:
    found = extracted_messages()
    assert {"Attention Lab", "Presenter mode", "Head lab", "One head: the worked example"} <= found


def _forms(string: str | tuple[str, ...]) -> tuple[str, ...]:
    """Every form of a translation: one for a plain message, each plural form of a plural."""
    return string if isinstance(string, tuple) else (string,)


def test_spanish_catalog_translates_every_extracted_message(spanish) -> None:
    """Fails after new strings: run `make messages`, then translate the empty msgstr."""
    missing = sorted(
        m
        for m in extracted_messages()
        if m not in spanish or spanish[m].fuzzy or not all(_forms(spanish[m].string))
    )
    assert missing == []


def test_spanish_catalog_keeps_every_placeholder(spanish) -> None:
    problems = [(m.id, [str(e) for e in errors]) for m, errors in spanish.check() if errors]
    assert problems == []


@pytest.mark.parametrize(
    ("lang", "header", "expected"),
    [
        (None, None, "en"),
        (None, "es-MX,es;q=0.9,en;q=0.8", "es"),
        (None, "fr-CH, fr;q=0.9, es;q=0.8, *;q=0.5", "es"),
        (None, "de, en;q=0.5, es;q=0.4", "en"),
        (None, "es;q=0, en", "en"),
        (None, "es;q=banana", "en"),
        ("es", "en", "es"),
        ("en", "es", "en"),
        ("xx", "es", "es"),
    ],
)
def test_negotiate_prefers_the_switch_then_the_browser(lang, header, expected) -> None:
    assert negotiate(lang, header) == expected


def test_accept_language_orders_by_quality_then_position() -> None:
    assert accepted_locales("en;q=0.5, es-AR, de;q=0.5") == ["es", "en", "de"]


@pytest.mark.parametrize(
    ("locale", "value", "digits", "text"),
    [
        ("en", 16_777_216, None, "16,777,216"),
        ("es", 16_777_216, None, "16.777.216"),
        ("en", 0.5, 2, "0.50"),
        ("es", 0.5, 2, "0,50"),
        ("es", 1234.5, 0, "1.234"),  # rounded half to even
        # Beyond the decimal module's default 28 digits (the cost page's largest products):
        ("en", 10**36, 0, "1" + ",000" * 12),
        ("en", 2.0**100, 0, "1,267,650,600,228,229,400,000,000,000,000"),
    ],
)
def test_format_number_follows_the_locale(locale, value, digits, text) -> None:
    with use_locale(locale):
        assert format_number(value, digits) == text


@pytest.mark.parametrize("locale", ["en", "es"])
def test_a_table_number_reads_the_same_by_the_short_way_and_the_general_one(locale) -> None:
    """Python floats with fixed decimals take a short way through format_number; a numpy
    float (the same value) takes the general one: they must agree, signs and zeros included."""
    rng = np.random.default_rng(5)
    values = [
        *rng.normal(0, 3, 300),
        *rng.normal(0, 1e7, 100),
        *(rng.normal(0, 1, 100) * 1e-4),
        -0.0,
        0.0,
        -0.0004,
        -0.0005,
        0.0015,
        -1234.5,
        2.0**53 - 1,
        -(2.0**53) + 1,
    ]
    with use_locale(locale):
        for value in values:
            for digits in (0, 1, 2, 3):
                short = format_number(float(value), digits)
                assert short == format_number(np.float64(value), digits), (value, digits)


@pytest.mark.parametrize("locale", ["en", "es"])
def test_many_numbers_at_once_read_as_each_one_alone(locale) -> None:
    """format_numbers, format_rows and format_vectors (the tables' and figures' bulk way)
    write every value exactly as format_number and format_vector write it alone."""
    rng = np.random.default_rng(7)
    special = [None, math.inf, -math.inf, math.nan, -0.0, -0.0004, 2.0**60, -(2.0**53), 12, -7]
    values = [*rng.normal(0, 3, 200).tolist(), *rng.normal(0, 1e7, 50).tolist(), *special]
    matrix = rng.normal(0, 2, (5, 3))
    with use_locale(locale):
        floats = [-0.0, -0.0004, -0.0001, 0.5, -0.0, *values[:250], -1e-9, -(2.0**53) + 1]
        for digits in (0, 2, 3, 6):
            for numbers in (values, floats):  # with special values, and floats alone
                alone = [format_number(v, digits) for v in numbers]
                assert format_numbers(numbers, digits) == alone
                assert format_numbers(np.array(numbers, dtype=object), digits) == alone
        assert format_rows(matrix, 3) == [[format_number(float(v), 3) for v in r] for r in matrix]
        assert format_rows([[1.5, None]], 1) == [[format_number(1.5, 1), "−∞"]]
        separator = "; " if locale == "es" else ", "
        vectors = ["[" + separator.join(format_number(v, 2) for v in r) + "]" for r in matrix]
        assert format_vectors(matrix) == vectors
        assert [format_vector(row) for row in matrix] == vectors
        assert format_numbers([]) == []


def test_python_strings_translate_in_the_current_locale() -> None:
    with use_locale("es"):
        assert gettext("Presenter mode") == "Modo presentación"
    assert gettext("Presenter mode") == "Presenter mode"


def test_lang_parameter_renders_spanish(client) -> None:
    page = client.get("/", params={"lang": "es"})
    assert page.status_code == 200
    assert '<html lang="es">' in page.text
    assert "Una cabeza de atención, etapa por etapa" in page.text
    assert "Modo presentación" in page.text
    assert page.headers["content-language"] == "es"


def test_accept_language_renders_spanish_and_varies(client) -> None:
    page = client.get("/", headers={"accept-language": "es-ES,es;q=0.9"})
    assert "Vectores de los tokens" in page.text
    assert "accept-language" in page.headers["vary"].lower()


def test_english_is_the_default(client) -> None:
    page = client.get("/")
    assert '<html lang="en">' in page.text
    assert "One attention head, every stage" in page.text


def test_language_switch_keeps_the_page_state(client) -> None:
    page = client.get("/", params={"present": "1"})
    spanish = re.search(r'href="([^"]*)" hreflang="es"', page.text).group(1)
    assert "present=1&amp;lang=es" in spanish  # the view kept, the language switched
    assert set(LOCALES) == {"en", "es"}


def test_concurrent_readers_keep_their_own_language() -> None:
    """Forty requests in flight at once, alternating languages: none answers in the other."""

    async def run() -> list[tuple[str, str]]:
        transport = httpx.ASGITransport(app=create_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:

            async def fetch(lang: str) -> tuple[str, str]:
                page = await client.get("/", params={"lang": lang})
                return lang, page.text

            return await asyncio.gather(*(fetch(("en", "es")[i % 2]) for i in range(40)))

    answers = run_async(run())
    for lang, text in answers:
        spanish_title = "Una cabeza de atención" in text
        assert spanish_title == (lang == "es"), lang
        assert f'<html lang="{lang}">' in text


@pytest.mark.parametrize(("lang", "entries"), [("en", "17,179,869,184"), ("es", "17.179.869.184")])
def test_cost_page_groups_digits_for_the_reader(client, lang, entries) -> None:
    page = client.get("/cost", params={"seq_len": "131072", "lang": lang})
    assert page.status_code == 200
    assert entries in page.text


@pytest.mark.parametrize("path", [path for path, _ in NAV])
def test_every_page_renders_in_spanish(client, path) -> None:
    page = client.get(path, params={"lang": "es", "present": "1"})
    assert page.status_code == 200
    assert '<html lang="es">' in page.text
    assert "Modo presentación" not in page.text  # the toggle now offers to leave it
    assert "Salir del modo presentación" in page.text


def test_only_pages_vary_by_language(client) -> None:
    assert "accept-language" in client.get("/lessons").headers["vary"].lower()
    api = client.post("/api/attention", json={}, headers={"accept-language": "es"})
    assert "accept-language" not in api.headers.get("vary", "").lower()
    assert "content-language" not in api.headers


def test_a_page_answered_in_one_language_is_not_replayed_in_another(client) -> None:
    """Pages may be kept and replayed (a response cache): the language is part of the key."""
    for _ in range(2):
        assert "One attention head" in client.get("/").text
        assert "Una cabeza de atención" in client.get("/", params={"lang": "es"}).text
        assert "Una cabeza de atención" in client.get("/", headers={"accept-language": "es"}).text
        present = client.get("/", params={"present": "1"}).text
        assert '<body class="present"' in present
