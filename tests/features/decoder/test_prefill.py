"""The prompt's rows kept from one request to the next (app/features/decoder/prefill.py):
an answer that resumed after a shared prefix equals the answer computed from scratch, and
the kept rows stay within their bytes."""

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from app.features.decoder import prefill, service
from app.features.decoder.prefill import Prefilled, PrefillKey, Prefills
from app.features.decoder.results import DecoderResult
from app.features.decoder.schemas import DecoderRequest
from app.features.decoder.store import LoadedDecoder
from app.features.stages.schemas import CacheSpec
from app.math import decoding as dc
from app.math import llama
from app.settings import Settings
from tests.conftest import TEST_SETTINGS
from tests.math.test_llama import reference

SETTINGS = Settings(**TEST_SETTINGS)


@pytest.fixture
def resumed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The rows each request resumed after (0: computed from scratch), from a clean cache."""
    rows: list[int] = []
    longest = prefill.prefills.longest

    def watched(key: PrefillKey, ids: list[int]) -> tuple[Prefilled, int] | None:
        found = longest(key, ids)
        rows.append(0 if found is None else found[1])
        return found

    prefill.prefills.clear()
    monkeypatch.setattr(prefill.prefills, "longest", watched)
    yield rows
    prefill.prefills.clear()


def assert_same(a: Any, b: Any, path: str = "answer") -> None:
    """Every field equal, numbers to float32 rounding (−inf where the mask hides a key)."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        a, b = vars(a), vars(b)
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for name in a:
            assert_same(a[name], b[name], f"{path}.{name}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, (float, np.ndarray)) and not isinstance(a, bool):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-4, err_msg=path)
    else:
        assert a == b, path


def decode(text: str, **fields: Any) -> DecoderResult:
    return service.compute_decoder(DecoderRequest(text=text, **fields), SETTINGS)


@pytest.mark.parametrize(
    "cache",
    [
        CacheSpec(),
        CacheSpec(policy="window", window=4),
        CacheSpec(policy="sinks", window=4, sinks=2),
    ],
    ids=["full", "window 4", "sinks 2 + window 4"],
)
def test_an_edit_at_the_end_gives_the_answer_computed_from_scratch(
    decoder: LoadedDecoder, resumed: list[int], cache: CacheSpec
) -> None:
    fields = {"generate": 2, "weights": "layer", "layer": 3, "head": 4, "cache": cache}
    decode("The old fisherman mended his nets every mornin", **fields)
    typed = decode("The old fisherman mended his nets every morning", **fields)
    again = decode("The old fisherman mended his nets every morning", **fields)
    prefill.prefills.clear()
    scratch = decode("The old fisherman mended his nets every morning", **fields)
    assert resumed == [0, 8, 9, 0]  # " morn" "in" became " morning"; then all 9 were kept
    assert_same(typed, scratch)
    assert_same(again, scratch)


def test_the_capital_of_france_typed_key_by_key_still_gives_paris(
    decoder: LoadedDecoder, resumed: list[int]
) -> None:
    for text in ("The capital of France", "The capital of France i", "The capital of France is"):
        answer = decode(text, top=5)
    assert resumed == [0, 4, 4]
    assert [c.id for c in answer.next] == reference()["0/top_ids"][:5].tolist()
    assert answer.next[0].token == " Paris"
    assert answer.next[0].p == pytest.approx(0.7725, abs=5e-4)
    np.testing.assert_allclose(
        answer.surprisal[1:], reference()["0/surprisal"], atol=1e-4
    )  # against transformers on the same file


def test_other_heads_or_another_policy_never_share_rows(
    decoder: LoadedDecoder, resumed: list[int]
) -> None:
    decode("The capital of France is")
    decode("The capital of France is", ablate=[[3, 4]])
    decode("The capital of France is", cache=CacheSpec(policy="window", window=3))
    decode("The capital of France is", layer=7, head=1)
    decode("The capital of France was")
    assert resumed == [0, 0, 0, 0, 4]


def test_a_generation_keeps_its_prompt_rows_alone_and_a_background_run_nothing(
    decoder: LoadedDecoder, resumed: list[int]
) -> None:
    background = DecoderRequest(text="The capital of Spain is")
    service.compute_decoder(background, SETTINGS, remember=False)  # as the page's kept runs
    decode("The capital of France is", generate=3)
    decode("The capital of France is")
    assert resumed == [0, 0, 5]  # nothing kept from Spain; all 5 prompt rows from France
    key = PrefillKey(id(decoder.weights), dc.FULL, (), (), None, None)
    found = prefill.prefills.longest(key, [decoder.tokenizer.encode("The").ids[0]])
    assert found is not None
    kept = found[0]
    assert (len(kept.ids), kept.kv.k.shape[1], kept.log.first.shape[-1]) == (5, 5, 5)


def entry(decoder: LoadedDecoder, ids: tuple[int, ...]) -> Prefilled:
    config, n = decoder.weights.config, len(ids)
    return Prefilled(
        ids=ids,
        kv=llama.KVRecord(config, n, np.dtype(np.float32)),
        log=llama.AttentionLog(config, n),
        watch=None,
        hidden=np.zeros((n, config.d_model), dtype=np.float32),
        normaliser=np.zeros(n, dtype=np.float32),
        surprisal=[None] * n,
    )


def test_the_kept_prompts_stay_within_their_bytes(decoder: LoadedDecoder) -> None:
    key = PrefillKey(1, dc.FULL, (), (), None, None)
    size = entry(decoder, (1, 2, 3)).nbytes
    kept = Prefills(max_bytes=3 * size)
    for ids in [(1, 2, 3), (1, 2, 4), (1, 5, 6), (7, 8, 9)]:
        kept.keep(key, entry(decoder, ids))
    found = kept.longest(key, [1, 2, 4, 7])
    assert found is not None
    assert (found[0].ids, found[1]) == ((1, 2, 4), 3)
    oldest_gone = kept.longest(key, [1, 2, 3])
    assert oldest_gone is not None
    assert (oldest_gone[0].ids, oldest_gone[1]) == ((1, 2, 4), 2)
    assert kept.longest(key, [2, 1]) is None
    assert kept.longest(dataclasses.replace(key, policy=dc.CachePolicy("window", 2)), [7]) is None
    kept.keep(key, entry(decoder, tuple(range(1, 11))))  # larger than the whole bound
    biggest = kept.longest(key, list(range(1, 11)))
    assert biggest is not None
    assert biggest[0].ids == (1, 2, 4)
