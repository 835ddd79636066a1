"""Spanish pages say nothing in English: every page, in several states, rendered with
?lang=es, and its visible text (the HTML's text and labels, and every figure's titles, axis
titles, legends, hover text and annotations) searched for each message whose Spanish
differs from its English. Numbers on those pages are written the Spanish way, while the
values meant for machines (form fields, links, JSON, CSV) keep theirs."""

import json
import re
from collections.abc import Iterator
from html import unescape
from html.parser import HTMLParser
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.core.i18n import catalog, format_number, format_size, format_vector, use_locale
from app.features.walkthrough.page import STEP_NAMES
from app.web.templating import figure_data, fmt_si

PAGES = [
    "/",
    "/?tokens=The+cat+sleeps+%3Cpad%3E&pad=3&query=1",
    "/?mask=window&window=2&query=99",
    "/?tokens=one",
    *(f"/walkthrough?step={name}" for name in STEP_NAMES),
    "/walkthrough?predict=1&step=weights",
    "/heads",
    "/heads?heads=8&kv_heads=2&mask=causal",
    "/heads?heads=4&kv_heads=3",
    "/cost",
    "/cost?layers=1&heads=1&kv_heads=1&seq_len=1&dtype=fp8",
    "/cost?preset=llama-2-7b&seq_len=131072",
    "/cost?preset=mistral-7b&sinks=4",
    "/cost?preset=deepseek-v2",
    "/kernel",
    "/kernel?prompt=1&tile_step=9&decode_step=1",
    "/kernel?cache=sinks&cache_window=2&sinks=1&decode_step=2&order=fa1",
    "/model",
    "/model?text=a+b&compare=a+c&off=0.1&lines=2.3",
    "/model?text=a+b&role=self&query=9",
    "/model?text=&off=%C2%B2.0",
    "/decoder?go=generate&method=sample&policy=sinks&off=17.4&layer=17&head=4",
    "/lessons",
    "/embed?src=/heads",
]
# Figure fields a reader sees: titles, legends, labels, hover text, annotations.
SHOWN_KEYS = {"text", "name", "hovertemplate", "customdata", "ticktext", "hovertext"}
ATTRIBUTES = {"title", "aria-label", "placeholder", "alt", "data-busy"}
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|%%")


class Visible(HTMLParser):
    """The text of a page as a reader meets it, one string per text node, label or figure
    string."""

    def __init__(self) -> None:
        super().__init__()
        self.strings: list[str] = []
        self._skip = 0
        self._figure = False
        self._data = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.strings += [v for k, v in found.items() if k in ATTRIBUTES and v]
        if tag in ("script", "style"):
            self._skip += 1
            self._figure = tag == "script" and found.get("type") == "application/json"
            self._data = ""

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip -= 1
            if self._figure:
                self.strings += list(figure_strings(json.loads(self._data)))
            self._figure = False

    def handle_data(self, data: str) -> None:
        if self._skip:
            self._data += data
        elif data.strip():
            self.strings.append(data.strip())


def figure_strings(value: Any, key: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from figure_strings(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from figure_strings(v, key)
    elif isinstance(value, str) and key in SHOWN_KEYS:
        yield unescape(re.sub(r"<[^>]+>|%\{[^}]*\}", " ", value))


def visible_strings(html: str) -> list[str]:
    parser = Visible()
    parser.feed(html)
    return parser.strings


@pytest.fixture(scope="module")
def english_fragments() -> list[str]:
    """The English pieces of every message whose Spanish differs: the text between its
    placeholders that the Spanish does not share (and no other Spanish message uses)."""
    messages = catalog("es")
    pairs = []
    for message in messages:
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        pairs += [(i, s) for i in ids for s in strings[:1]]
    spanish = "\n".join(s for _, s in pairs)
    fragments = set()
    for english, translated in pairs:
        if english == translated:
            continue
        for piece in PLACEHOLDER.split(english):
            piece = piece.strip(" .,:;()")
            if re.search(r"[A-Za-z]{3}", piece) and piece not in spanish:
                fragments.add(piece)
    return sorted(fragments)


def english_on(strings: list[str], fragments: list[str]) -> list[str]:
    """Fragments found: one word must be a whole string (an axis title "key"); longer ones
    may sit inside a sentence."""
    whole = set(strings)
    text = "\n".join(strings)
    found = []
    for piece in fragments:
        if " " not in piece:
            if piece in whole:
                found.append(piece)
        elif re.search(rf"(?<!\w){re.escape(piece)}(?!\w)", text):
            found.append(piece)
    return found


@pytest.mark.parametrize("path", PAGES)
def test_no_english_is_left_on_a_spanish_page(
    client: TestClient, english_fragments: list[str], path: str
) -> None:
    page = client.get(path + ("&" if "?" in path else "?") + "lang=es")
    assert page.status_code in (200, 422), path
    assert '<html lang="es">' in page.text
    strings = visible_strings(page.text)
    assert english_on(strings, english_fragments) == []
    assert [s for s in strings if english_decimal(s)] == []


VERSION = re.compile(r"\d+(\.\d+){2,}")  # 1.0.0: a package's version, not a number
# 0.5, 2.1 or 8.59: a decimal point (Spanish groups thousands in threes: 4.096)
ENGLISH_DECIMAL = re.compile(r"(?<![\w.-])(0\.\d+|\d+\.\d{1,2})(?![\d.])")


def english_decimal(text: str) -> bool:
    return bool(ENGLISH_DECIMAL.search(VERSION.sub("", text)))


def test_the_check_finds_english(client: TestClient, english_fragments: list[str]) -> None:
    """The same search on the English page finds the English it is looking for."""
    found = english_on(visible_strings(client.get("/cost?lang=en").text), english_fragments)
    assert {"Score entries per head", "Does it fit in"} <= set(found)
    english = visible_strings(client.get("/", params={"query": 1}).text)
    assert {s for s in english if english_decimal(s)} >= {"0.707", "[0.835, −0.340]"}
    assert not english_decimal("Llama-3.1-8B, v0.1, 1.0.0, 4.096")


# ---------------------------------------------------------------- numbers and plurals


@pytest.mark.parametrize(
    ("locale", "value", "kwargs", "text"),
    [
        ("en", 0.70710678, {"digits": 3}, "0.707"),
        ("es", 0.70710678, {"digits": 3}, "0,707"),
        ("es", -0.0004, {"digits": 3}, "0,000"),  # −0.000 reads 0
        ("es", -1234.5678, {"digits": 2}, "−1.234,57"),
        ("en", 0.5, {}, "0.5"),
        ("es", 2.125, {"digits": 2, "trim": True}, "2,12"),  # Python's rounding of 2.125
        ("es", 0.01234, {"digits": 4, "signed": True}, "+0,0123"),
        ("es", 1.25e-7, {"digits": 1, "scientific": True}, "1,2e-07"),
        ("es", None, {}, "−∞"),
        ("es", float("inf"), {}, "∞"),
    ],
)
def test_every_number_follows_the_readers_convention(locale, value, kwargs, text) -> None:
    with use_locale(locale):
        assert format_number(value, **kwargs) == text


@pytest.mark.parametrize(
    ("locale", "vector", "size", "flops", "separators"),
    [
        ("en", "[1.00, −0.50]", "767.61 MiB", "8.59 GFLOP", ".,"),
        ("es", "[1,00; −0,50]", "767,61 MiB", "8,59 GFLOP", ",."),
    ],
)
def test_vectors_sizes_flops_and_figures_follow_it_too(
    locale, vector, size, flops, separators
) -> None:
    with use_locale(locale):
        assert format_vector([1, -0.5]) == vector
        assert format_size(804_900_000) == size
        assert fmt_si(8_589_934_592, "FLOP") == flops
        assert json.loads(figure_data({"data": [], "layout": {}}))["layout"]["separators"] == (
            separators
        )


def test_the_spanish_lab_writes_decimal_commas_but_keeps_machine_values(client) -> None:
    html = client.get("/", params={"lang": "es", "query": 1}).text
    strings = visible_strings(html)
    assert {"0,707", "0,670", "0,330", "[0,835; −0,340]"} <= set(strings)
    assert not any(re.fullmatch(r"−?\d+\.\d+", s) for s in strings), "an English decimal"
    assert 'value="0.5"' in html  # W_Q's cell: the matrix text format of the forms and URLs
    english = client.get("/", params={"query": 1})
    assert {"0.707", "0.670", "[0.835, −0.340]"} <= set(visible_strings(english.text))
    csv = client.get("/lab.csv", params={"lang": "es"}).text
    assert "0.707" in csv
    assert "0,707" not in csv
    assert client.get("/lab.json", params={"lang": "es"}).json() == client.get("/lab.json").json()


def test_the_spanish_cost_page_groups_and_decimals_the_spanish_way(client) -> None:
    strings = visible_strings(client.get("/cost", params={"lang": "es"}).text)
    assert {"16.777.216", "8,59 GFLOP", "32 MiB"} <= set(strings)
    assert "Lote más grande con n = 4.096 (secuencias a la vez): 12.288," in strings


@pytest.mark.parametrize(
    ("lang", "expected"),
    [
        ("en", ["KV cache, 1 layer × batch 1", "Attention memory of one layer (1 head × batch 1)",
                "1 token", "One dense score matrix per head, stored at 1 byte per element"]),
        ("es", ["Caché KV, 1 capa × lote 1", "Memoria de atención de una capa (1 cabeza × lote 1)",
                "1 token",
                "Una matriz densa de puntuaciones por cabeza, guardada a 1 byte por elemento"]),
    ],
)  # fmt: skip
def test_one_of_a_thing_is_singular_on_the_cost_page(client, lang, expected) -> None:
    query = {"layers": 1, "heads": 1, "kv_heads": 1, "seq_len": 1, "dtype": "fp8", "lang": lang}
    strings = visible_strings(client.get("/cost", params=query).text)
    assert set(expected) <= set(strings)


@pytest.mark.parametrize(
    ("lang", "expected"),
    [
        ("en", ["K cache (1 row)", "V cache (1 row)",
                "Step 1 of 3: prefill of the first 1 token"]),
        ("es", ["Caché K (1 fila)", "Caché V (1 fila)",
                "Paso 1 de 3: prellenado del primer token (1)"]),
    ],
)  # fmt: skip
def test_one_of_a_thing_is_singular_on_the_kernel_page(client, lang, expected) -> None:
    strings = visible_strings(client.get("/kernel", params={"prompt": 1, "lang": lang}).text)
    assert set(expected) <= set(strings)


def test_numpy_numbers_are_written_like_python_ones() -> None:
    with use_locale("es"):
        assert format_number(np.int64(2**60)) == "1.152.921.504.606.846.976"
        assert format_number(np.float32(0.5), 2) == "0,50"
