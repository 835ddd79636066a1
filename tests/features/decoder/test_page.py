"""/decoder as a person reads it: the bars, the surprisal, the steps, the groups, the cache
and the heads carry the API's numbers for the same state; bad input is a sentence in the
reader's language; a missing or loading model is a 503 page that says what to do."""

import re
from collections.abc import Callable
from html import unescape
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from starlette.datastructures import QueryParams

from app.core.i18n import use_locale
from app.features.decoder.form import DecoderForm
from app.features.decoder.page import INDUCTION, LONG_TEXT, kept_runs
from app.features.decoder.store import INSTALL_HINT, LoadedDecoder
from app.settings import Settings
from tests.aio import run_async
from tests.conftest import TEST_SETTINGS
from tests.features.decoder.conftest import SlowLoad

pytestmark = pytest.mark.usefixtures("decoder")


@pytest.fixture(scope="module", autouse=True)
def kept(decoder: LoadedDecoder) -> None:
    """The runs the page starts in the background for its default window and sinks (the
    long text, the induction test), awaited before the pages are read."""

    async def finished() -> None:
        runs = kept_runs(decoder, DecoderForm(), Settings(**TEST_SETTINGS))
        for run in runs.values():
            await run.get()

    run_async(finished())


def post(client: TestClient, **body: Any) -> Any:
    response = client.post("/api/decoder", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def bar_values(html: str, list_id: str) -> list[tuple[str, float]]:
    """(piece, p) of each bar of one list, as the page writes them."""
    body = html.split(f'id="{list_id}"', 1)[1].split("</ol>", 1)[0]
    found = re.findall(r'<code class="piece">([^<]*)</code>.*?<span class="p">([^<]*)', body, re.S)
    return [(unescape(piece), float(p.strip().replace(",", "."))) for piece, p in found]


def text_of(html: str, element_id: str) -> str:
    match = re.search(rf'<(\w+)[^>]*id="{element_id}"[^>]*>(.*?)</\1>', html, re.S)
    assert match, element_id
    return unescape(re.sub(r"<[^>]+>", "", match[2])).strip()


def number(text: str) -> int:
    return int(text.replace(",", "").replace(".", ""))


def test_the_form_reads_strict_numbers_and_carries_only_what_applies() -> None:
    form, problems, _ = DecoderForm.read(QueryParams("generate=²&top_k=9&off=3.4&off=x"))
    assert [p.field for p in problems] == ["generate", "off"]
    assert form.generate == 0
    assert form.off == []
    assert dict(DecoderForm().state()) == {
        "text": "The capital of France is", "generate": 0, "method": "greedy", "policy": "full",
        "layer": 0, "head": 0,
    }  # fmt: skip
    sampled, _, _ = DecoderForm.read(
        QueryParams("method=sample&seed=3&policy=sinks&window=8&sinks=2&off=17.4&query=")
    )
    state = sampled.state()
    assert ("seed", 3) in state
    assert ("window", 8) in state
    assert ("sinks", 2) in state
    assert ("off", "17.4") in state
    assert sampled.query is None
    assert sampled.request().cache.model_dump() == {"policy": "sinks", "window": 8, "sinks": 2}
    assert sampled.model_copy(update={"go": "generate"}).snapped().generate == 8
    picked, _, _ = DecoderForm.read(QueryParams("layer=2&head=1&query=3&pick=17.4"))
    opened = picked.snapped()  # a cell of the grid: that head, at the last token
    assert (opened.layer, opened.head, opened.query, opened.pick) == (17, 4, None, None)
    assert "pick" not in dict(picked.state())


@pytest.mark.parametrize(
    ("lang", "query", "words"),
    [
        ("en", "generate=65", "generate is 65 but must be at most 64"),
        ("es", "generate=65", "generate vale 65 pero debe ser como mucho 64"),
        ("en", "off=30.1", "off takes a head as layer.head, layer 0 to 29"),
        ("es", "off=30.1", "off indica una cabeza como capa.cabeza"),
        ("en", "pick=3.9", "pick takes a head as layer.head, layer 0 to 29 and head 0 to 8"),
        ("en", "text=+++", "text is empty; type a prompt"),
        ("es", "text=+++", "text está vacío; escribe un prompt"),
        ("es", "text=" + "palabra+" * 300, "lee como mucho 256"),
    ],
)
def test_bad_input_is_a_422_sentence_in_the_readers_language(
    client: TestClient, lang: str, query: str, words: str
) -> None:
    response = client.get(f"/decoder?lang={lang}&{query}")
    assert response.status_code == 422
    messages = response.text.split('id="page-messages"', 1)[1].split("</div>", 1)[0]
    assert words in unescape(messages)
    fragment = client.get(f"/decoder?lang={lang}&{query}&fragment=1")
    assert (fragment.status_code, fragment.headers["x-input-status"]) == (200, "422")


def test_the_bars_surprisal_and_groups_are_the_apis(client: TestClient) -> None:
    text = "When John and Mary went to the store, John gave a drink to"
    response = client.get("/decoder", params={"text": text, "layer": 2, "head": 4, "query": 3})
    assert response.status_code == 200
    html = response.text
    answer = post(client, text=text, layer=2, head=4, query=3, weights="layer")
    shown = bar_values(html, "next-bars")
    assert [p for _, p in shown] == pytest.approx([c["p"] for c in answer["next"]], abs=5e-4)
    assert shown[0] == ("␣Mary", pytest.approx(0.91, abs=0.01))
    surprisal = re.findall(r'<span class="nats">([^<]*)</span>', html)
    assert surprisal[0] == "—"
    assert [float(s) for s in surprisal[1:]] == pytest.approx(answer["surprisal"][1:], abs=5e-3)
    assert "key/value head 1 is read by query heads 3, 4, 5" in html
    assert "shared with query heads 3, 5" in text_of(html, "head-shares")
    assert 'id="head-weights"' in html
    assert 'id="layer-head-8"' in html
    query_rows = html.split('id="head-query"', 1)[1].split("</table>", 1)[0]
    assert "The query “␣Mary”" in unescape(query_rows)  # token 3 of the prompt


def test_the_cache_measured_agrees_with_the_cost_calculator(client: TestClient) -> None:
    params = {"text": "The capital of France is", "generate": 6, "policy": "sinks"}
    html = client.get("/decoder", params={**params, "window": 4, "sinks": 2}).text
    answer = post(
        client, text=params["text"], generate=6, cache={"policy": "sinks", "window": 4, "sinks": 2}
    )
    cost = client.get(
        "/api/cost",
        params={"preset": "smollm2-135m", "dtype": "fp32", "seq_len": 11, "window": 4, "sinks": 2},
    ).json()
    measured = number(text_of(html, "cache-measured"))
    assert measured == answer["kv_cache"]["bytes"] == cost["kv_cache_bytes"] == 6 * 46080
    assert number(text_of(html, "cache-cost")) == measured
    assert text_of(html, "cache-formula").endswith("6 × 2 × 30 × 3 × 64 × 4 = 276,480")
    assert "The three agree" in text_of(html, "cache-agree")
    steps = re.findall(r"read (\d+) cached rows", html)
    assert [int(r) for r in steps] == [len(s["cached_positions"]) for s in answer["steps"]]
    assert steps[-1] == "6"  # two sinks and a window of four


def test_generation_is_step_by_step_and_the_same_seed_gives_the_same_text(
    client: TestClient,
) -> None:
    def page(seed: int) -> str:
        query = f"text=Once+upon+a+time&method=sample&temperature=1.5&top_k=100&seed={seed}"
        return client.get(f"/decoder?{query}&go=generate").text

    first, again, other = page(3), page(3), page(4)
    assert text_of(first, "generated-text") == text_of(again, "generated-text")
    assert text_of(first, "generated-text") != text_of(other, "generated-text")
    answer = post(
        client,
        text="Once upon a time",
        generate=8,
        sampling={"method": "sample", "temperature": 1.5, "top_k": 100, "seed": 3},
    )
    assert text_of(first, "generated-text") == answer["text"]
    assert len(re.findall(r'id="step-\d+-bars"', first)) == 8
    # the top bars are the candidates after the prompt, the first step's
    assert [p for _, p in bar_values(first, "next-bars")] == pytest.approx(
        [c["p"] for c in answer["steps"][0]["top"]], abs=5e-4
    )
    assert 'href="/decoder?text=Once+upon+a+time&amp;generate=0' in first  # one step of undo


def test_policies_induction_and_heads_switched_off(client: TestClient) -> None:
    html = client.get("/decoder", params={"off": ["18.6", "17.4"], "layer": 18, "head": 6}).text
    full = post(client, text=LONG_TEXT)
    window = post(client, text=LONG_TEXT, cache={"policy": "window", "window": 16})
    means = re.findall(r"<td>([\d.]+) nats</td>", html.split('id="policy-means"', 1)[1])
    assert float(means[0]) == pytest.approx(np.mean(full["surprisal"][20:]), abs=5e-3)
    assert float(means[1]) == pytest.approx(np.mean(window["surprisal"][20:]), abs=5e-3)
    assert float(means[1]) > float(means[0]) + 0.5  # the window alone loses the sink
    assert "“The”" in text_of(html, "sink-explained")
    induction = post(client, repeat_random=INDUCTION.model_dump())
    scores = np.array(induction["induction"])
    best = re.findall(r"layer (\d+) head (\d+)</a>: induction score ([\d.]+)", html)
    layer, head, score = best[0]
    assert (int(layer), int(head)) == np.unravel_index(scores.argmax(), scores.shape)
    assert float(score) == pytest.approx(scores.max(), abs=5e-3)
    off = post(client, text="The capital of France is", ablate=[[17, 4], [18, 6]])
    shown = bar_values(html, "ablation-bars")
    assert [p for _, p in shown] == pytest.approx([c["p"] for c in off["next"]], abs=5e-4)
    before = re.findall(r"all heads on: ([\d.]+)", html)
    assert [float(p) for p in before] == pytest.approx(off["unablated_p"], abs=5e-4)
    assert "Switched off: layer 17 head 4, layer 18 head 6." in text_of(html, "ablated-heads")
    assert "Switch this head back on" in html


def test_the_timing_run_shows_its_ratio_once_measured(client: TestClient) -> None:
    timing = client.get("/api/decoder/measure")
    if timing.status_code == 503:  # still running on a busy machine: wait for it
        timing = client.get("/api/decoder/measure")
    assert timing.status_code == 200
    ratio = timing.json()["speedup"][-1]
    html = client.get("/decoder").text
    key = text_of(html, "key-numbers")
    assert f"is {ratio:.1f}× faster than recomputing {timing.json()['lengths'][-1]} tokens" in key


def test_a_missing_model_is_a_503_page_saying_how_to_install_it(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    client = make_client(decoder_gguf=tmp_path / "gone.gguf")
    for lang, words in (("en", "is not installed"), ("es", "no está instalado")):
        response = client.get(f"/decoder?lang={lang}")
        assert response.status_code == 503
        assert words in response.text
        assert INSTALL_HINT in response.text
        assert str(tmp_path) not in response.text


def test_while_the_model_loads_the_page_says_so(
    make_client: Callable[..., TestClient], slow_load: SlowLoad
) -> None:
    client = make_client(decoder_gguf=slow_load.gguf, decoder_wait_seconds=0.05)
    response = client.get("/decoder?lang=es")
    slow_load.release.set()
    assert (response.status_code, response.headers["retry-after"]) == (503, "5")
    assert "aún se está cargando" in text_of(response.text, "model-loading")
    assert '<meta http-equiv="refresh" content="5">' in response.text


def test_spanish_numbers_on_the_grid_whose_cells_open_their_head(client: TestClient) -> None:
    html = client.get("/decoder?lang=es").text
    cells = re.findall(
        r'<button form="decoder-form" name="pick" value="(\d+\.\d)" title="([^"]*)"', html
    )
    assert [value for value, _ in cells] == [f"{a}.{b}" for a in range(30) for b in range(9)]
    titles = [title for _, title in cells]
    assert unescape(titles[17 * 9 + 4]).startswith("capa 17 cabeza 4: anterior ")
    with use_locale("es"):
        assert all(re.search(r"anterior \d,\d\d", unescape(t)) for t in titles)
