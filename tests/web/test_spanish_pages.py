"""Spanish pages say nothing in English: every page, in several states, rendered with
?lang=es, and its visible text (the HTML's text and labels, and every figure's titles, axis
titles, legends, hover text and annotations) searched for each message whose Spanish
differs from its English. Numbers on those pages are written the Spanish way, while the
values meant for machines (form fields, links, JSON, CSV) keep theirs."""

import functools
import json
import re
from collections.abc import Iterator
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from babel.messages.pofile import read_po
from fastapi.testclient import TestClient

from app.core.i18n import catalog, format_number, format_size, format_vector, use_locale
from app.features.walkthrough.page import STEP_NAMES
from app.figures.charts import bars
from app.web.templating import fmt_si

PAGES = [
    "/",
    "/?tokens=The+cat+sleeps+%3Cpad%3E&pad=3&query=1",
    "/?mask=window&window=2&query=99",
    "/?tokens=one",
    "/shuffle?tokens=the+cat+saw+the+cat&mask=bidirectional&positional=rope",
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
    "/lessons?present=1",
    "/embed?src=/heads",
    "/docs",
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
    may sit inside a sentence (searched for all at once: a page has some 100 kB of text)."""
    whole = set(strings)
    found = [piece for piece in fragments if " " not in piece and piece in whole]
    sentences = inside_sentences(tuple(piece for piece in fragments if " " in piece))
    return found + sorted({m.group(0) for m in sentences.finditer("\n".join(strings))})


@functools.cache
def inside_sentences(pieces: tuple[str, ...]) -> re.Pattern[str]:
    longest_first = sorted(pieces, key=len, reverse=True)
    return re.compile(rf"(?<!\w)(?:{'|'.join(map(re.escape, longest_first))})(?!\w)")


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
        chart = bars("c", ["a"], [1.0], name="n", title="t", y_title="y", x_title="x")
        assert chart.data_block()["figure"]["layout"]["separators"] == separators


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


# ---------------------------------------------------------------- error states in Spanish

LONG_TEXT = "palabra " * 2000  # longer than any page's text field: cut, and said so
LAB_ERRORS = [
    {"tokens": ""},
    {"tokens": "  "},
    {"d_model": "0"},
    {"d_k": "0"},
    {"d_v": "²"},
    {"d_model": "4x"},
    {"positional": "foo"},
    {"allowed": "12"},
    {"tokens": "a b", "x": "1,0;1"},  # ragged
    {"positional": "rope", "d_k": "3"},  # RoPE turns pairs: an odd d_k
    {"tokens": LONG_TEXT},
    {"query": "abc"},
    {"query": "99"},
    {"mask": "foo"},
    {"mask": "window", "window": "0"},
    {"pad": "x"},
    {"w_q": "abc"},
    {"seed": "-1"},
    {"scale": "maybe"},
]
BAD_STATES: list[tuple[str, dict[str, str]]] = [
    *(("/", query) for query in LAB_ERRORS),
    *(
        ("/walkthrough", query)
        for query in [
            {"step": "foo"},
            {"step": "weights", "predict": "1", "guess": "abc"},
            {"step": "weights", "predict": "1", "guess": "7"},
            {"step": "weights", "predict": "1", "key": "99"},  # key applies to the guess
            {"tokens": ""},
            {"positional": "rope", "d_k": "3"},
            {"x": "1,0;1"},
        ]
    ),
    *(
        ("/heads", query)
        for query in [
            {"text": ""},
            {"heads": "0"},
            {"heads": "4", "kv_heads": "3"},
            {"d_head": "0"},
            {"positional": "rope", "d_head": "3"},
            {"positional": "foo"},
            {"d_model": "²"},
            {"mask": "foo"},
            {"head": "99"},
            {"seed": "abc"},
            {"text": LONG_TEXT},
        ]
    ),
    *(
        ("/cost", query)
        for query in [
            {"seq_len": "0"},
            {"layers": "abc"},
            {"preset": "nope"},
            {"dtype": "foo"},
            {"heads": "0"},
            {"heads": "32", "kv_heads": "5"},
            {"batch": "²"},
            {"gpu_memory_gib": "-1"},
            {"window": "abc"},
        ]
    ),
    *(
        ("/kernel", query)
        for query in [
            {"block_q": "0"},
            {"block_k": "abc"},
            {"prompt": "99"},
            {"step": "abc"},
            {"order": "foo"},
            {"cache": "foo"},
            {"decode_step": "-1"},
            {"sram_elements": "0"},
            {"tokens": ""},
            {"positional": "rope", "d_k": "3"},
        ]
    ),
    *(
        ("/model", query)
        for query in [
            {"text": ""},
            {"layer": "9", "head": "0"},
            {"layer": "0", "head": "99"},
            {"query": "99"},
            {"compare": "  "},
            {"start": "abc"},
            {"role": "foo"},
            {"text": LONG_TEXT},
        ]
    ),
    *(
        ("/decoder", query)
        for query in [
            {"text": ""},
            {"generate": "abc"},
            {"temperature": "0"},
            {"layer": "99"},
            {"top_k": "²"},
            {"text": LONG_TEXT},
        ]
    ),
    ("/lessons", {"lesson": "nope"}),
    ("/embed", {"src": "https://elsewhere.example/"}),
    ("/docs", {"lesson_title": "t" * 500}),
]


@pytest.mark.parametrize(
    ("path", "query"),
    BAD_STATES,
    ids=[f"{path}?{'&'.join(f'{k}={v[:12]}' for k, v in q.items())}" for path, q in BAD_STATES],
)
def test_a_spanish_page_says_what_is_wrong_in_spanish(
    client: TestClient, english_fragments: list[str], path: str, query: dict[str, str]
) -> None:
    """Every page in a state it cannot take as it is: a sentence that says so (never the
    default shown in silence), it and the rest of the page in Spanish, never a 500."""
    page = client.get(path, params={**query, "lang": "es"})
    assert page.status_code in (200, 422), page.text[:300]
    assert '<html lang="es">' in page.text
    said = problems_said(page.text)
    assert said, "a state the page cannot take as it is, shown without a word about it"
    assert english_on(said, english_fragments) == []
    assert [s for s in said if english_words(s)] == []  # a sentence the catalog never saw
    assert english_on(visible_strings(page.text), english_fragments) == []


# Words of an English sentence that no Spanish sentence uses: one of them outside quotes (where
# a token, a field's value or a field name may stand) is a sentence that never met the catalog.
ENGLISH_WORDS = re.compile(
    r"(?<![\w'])(the|is|are|but|must|should|not|of|has|have|every|choose|pick|type|write|"
    r"shorten|which|there|numbers|input|one|row|rows|only|with|use|its)(?![\w'])",
    re.I,
)
QUOTED = re.compile(r"«[^»]*»|“[^”]*”|\"[^\"]*\"|'[^']*'|\([^)]*\)")


def english_words(sentence: str) -> list[str]:
    return ENGLISH_WORDS.findall(QUOTED.sub(" ", sentence))


def problems_said(html: str) -> list[str]:
    """The page's own sentences about its input: problems, notes, corrections, error boxes."""
    found = re.findall(
        r'<(p|div|ul|li)[^>]*class="[^"]*\b(?:note correction|error-box|problems?)\b[^"]*"[^>]*>'
        r"(.*?)</\1>|id=\"page-messages\"[^>]*>(.*?)</(?:div|section)>",
        html,
        re.S,
    )
    return [s for match in found for s in visible_strings(match[1] or match[2])]


JSON_ERRORS: list[tuple[str, str, Any]] = [
    # (method, path, body or query)
    ("POST", "/api/attention", {"tokens": []}),
    ("POST", "/api/attention", {"d_k": 0}),
    ("POST", "/api/attention", {"positional": "foo"}),
    ("POST", "/api/attention", {"tokens": ["a", "b"], "x": [[1, 0], [1]]}),
    ("POST", "/api/attention", {"positional": "rope", "d_k": 3}),
    ("POST", "/api/attention", {"mask": {"allowed": 12}}),
    ("POST", "/api/attention", {"tokenz": ["a"]}),
    ("POST", "/api/attention", {"query": 9}),
    ("POST", "/api/attention", {"x": [[1, "a"], [0, 1], [1, 1]], "seed": 1.5}),
    ("POST", "/api/attention", b'{"x": [1,'),
    ("POST", "/api/attention", b"[]"),
    ("POST", "/api/heads", {"heads": 0}),
    ("POST", "/api/heads", {"heads": 4, "kv_heads": 3}),
    ("POST", "/api/heads", {"positional": "rope", "d_head": 3}),
    ("POST", "/api/kernel/tiled", {"block_q": 0}),
    ("POST", "/api/kernel/tiled", {"order": "foo"}),
    ("POST", "/api/kernel/decode", {"prompt": 99}),
    ("POST", "/api/kernel/decode", {"cache": "foo"}),
    ("POST", "/api/model", {"text": ""}),
    ("POST", "/api/model", {"text": "a b", "layer": 9, "head": 0}),
    ("POST", "/api/decoder", {"text": ""}),
    ("POST", "/api/decoder", {"text": "a", "generate": -1}),
    ("GET", "/api/cost", {"seq_len": "0"}),
    ("GET", "/api/cost", {"preset": "nope"}),
    ("GET", "/api/cost", {"layers": "abc"}),
    ("GET", "/api/cost", {"heads": "32", "kv_heads": "5"}),
]


@pytest.mark.parametrize(
    ("method", "path", "sent"),
    JSON_ERRORS,
    ids=[f"{m} {p} {str(s)[:30]}" for m, p, s in JSON_ERRORS],
)
def test_every_api_error_speaks_the_readers_language(
    client: TestClient, english_fragments: list[str], method: str, path: str, sent: Any
) -> None:
    headers = {"Accept-Language": "es-ES,es;q=0.9"}
    if method == "GET":
        answer = client.get(path, params=sent, headers=headers)
    elif isinstance(sent, bytes):
        answer = client.post(path, content=sent, headers={**headers, **JSON_TYPE})
    else:
        answer = client.post(path, json=sent, headers=headers)
    assert 400 <= answer.status_code < 500, answer.text[:300]
    said = list(json_strings(answer.json()))
    assert said
    assert english_on(said, english_fragments) == [], said
    assert [s for s in said if english_words(s)] == []
    english = client.request(method, path, **request_args(method, sent)).json()
    assert list(json_strings(english)) != said, "the same words in English and Spanish"


JSON_TYPE = {"content-type": "application/json"}


def request_args(method: str, sent: Any) -> dict[str, Any]:
    if method == "GET":
        return {"params": sent}
    if isinstance(sent, bytes):
        return {"content": sent, "headers": JSON_TYPE}
    return {"json": sent}


def json_strings(value: Any, key: str = "") -> Iterator[str]:
    """The sentences of an error answer (its msg and detail strings, not field names)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k not in ("loc", "type", "input", "ctx", "url"):
                yield from json_strings(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from json_strings(v, key)
    elif isinstance(value, str):
        yield value


# ---------------------------------------------------------------- one voice: tú

# The usted forms a translation slips into ("Elija", "Siga", "escriba"…), as imperatives: not
# after "que" (up to two words on) or "se", where the same words are a subjunctive ("deja que
# cada token mire").
USTED = re.compile(
    r"(?<!que )(?<!se )(?<!\w)(usted|ustedes|elija|siga|escriba|use|cambie|pulse|abra|ponga|"
    r"compare|mire|vea|pruebe|haga|introduzca|pegue|añada|deje|cierre|señale|observe|fíjese|"
    r"escoja|seleccione|indique|quite|lea|cuente|recorra|pase|copie|tome|intente|vuelva|"
    r"empiece|adivine|dé|prepare|reparta|acórtelo|baraje)(?!\w)",
    re.I,
)
# Every Spanish catalog: the shell's and each feature's (a new feature's catalog joins itself).
SPANISH = Path(__file__).parents[2] / "translations" / "es" / "LC_MESSAGES"
ONE_VOICE = sorted(path.stem for path in SPANISH.glob("*.po"))


def test_the_voice_check_reads_every_catalog() -> None:
    assert {"shared", "lab", "walkthrough", "stages", "heads", "cost", "kernel"} <= set(ONE_VOICE)
    assert {"model", "decoder", "classroom", "docs"} <= set(ONE_VOICE)


@pytest.mark.parametrize("domain", ONE_VOICE)
def test_the_spanish_says_tu_never_usted(domain: str) -> None:
    path = SPANISH / f"{domain}.po"
    with path.open("rb") as po:
        messages = [m for m in read_po(po) if m.id]
    formal = [
        (word, text[:80])
        for m in messages
        for text in (m.string if isinstance(m.string, tuple) else (m.string,))
        for word in usted_forms(text)
    ]
    assert formal == []


def usted_forms(text: str) -> list[str]:
    return USTED.findall(SUBJUNCTIVE.sub("que ", text))


SUBJUNCTIVE = re.compile(r"\bque(?:\s+\w+){0,2}\s+(?=\w)")


def test_the_voice_check_finds_usted() -> None:
    assert usted_forms("Elija una cabeza. Siga la consulta; escriba un número") == [
        "Elija",
        "Siga",
        "escriba",
    ]
    assert usted_forms("Elige una cabeza: deja que cada token mire, se use") == []
