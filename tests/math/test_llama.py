"""The numpy decoder against two independent references: transformers reading the same GGUF
file (fixtures written once by tests/make_decoder_fixtures.py) and a plain float64 forward pass
(tests/llama_reference.py); and the cached decoding against the full pass under every policy."""

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from app.features.decoder.store import LoadedDecoder
from app.math import attention as att
from app.math import decoding as dc
from app.math import llama
from app.math import sampling as sm
from app.math.cost import kv_cache_bytes_per_token
from tests.llama_reference import final_hidden

pytestmark = pytest.mark.usefixtures("one_blas_thread")
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "decoder_reference.npz"
FLOAT32 = 1e-4  # our float32 against transformers' float32: different sums, same model


@cache
def reference() -> dict[str, np.ndarray]:
    with np.load(FIXTURE) as f:
        return {name: f[name] for name in f.files}


def text(t: int) -> str:
    return str(reference()["texts"][t])


def run(model: llama.LlamaWeights, ids: list[int], policy: dc.CachePolicy = dc.FULL, **kw):  # type: ignore[no-untyped-def]
    """The full pass (one prefill): its logits and the attention log of every layer."""
    log = llama.AttentionLog(model.config, len(ids), range(model.config.layers))
    decoder = llama.Decoder(model, len(ids), policy, observers=[log], **kw)
    return llama.unembed(decoder.feed(ids), model), log


# ---------------------------------------------------------------- against transformers


@pytest.mark.parametrize("t", [0, 1, 2])
def test_logits_and_attention_match_transformers_on_the_same_file(
    decoder: LoadedDecoder, t: int
) -> None:
    ref = reference()
    ids = decoder.tokenizer.encode(text(t)).ids
    assert ids == ref[f"{t}/ids"].tolist()
    logits, log = run(decoder.weights, ids)
    surprisal = sm.surprisal(logits[:-1], np.array(ids[1:]))
    np.testing.assert_allclose(surprisal, ref[f"{t}/surprisal"], atol=FLOAT32)
    log_p = sm.log_softmax(logits[-1].astype(np.float64))
    top = ref[f"{t}/top_ids"]
    assert np.argsort(-log_p, kind="stable")[:10].tolist() == top[:10].tolist()
    np.testing.assert_allclose(log_p[top], ref[f"{t}/top_log_p"], atol=FLOAT32)
    for i, layer in enumerate(ref["dense_layers"]):
        np.testing.assert_allclose(log.dense[int(layer)], ref[f"{t}/weights"][i], atol=1e-5)


def test_the_last_hidden_state_matches_transformers(decoder: LoadedDecoder) -> None:
    ids = reference()["0/ids"].tolist()
    h = llama.Decoder(decoder.weights, len(ids)).feed(ids)
    np.testing.assert_allclose(h, reference()["0/last_hidden"], atol=5e-4)  # values up to 34


@pytest.mark.parametrize(
    ("t", "word", "p"),
    [(0, " Paris", 0.7725), (1, " Mary", 0.9138)],
)
def test_the_two_example_prompts_give_their_word(
    decoder: LoadedDecoder, t: int, word: str, p: float
) -> None:
    ids = decoder.tokenizer.encode(text(t)).ids
    logits, _ = run(decoder.weights, ids)
    top, probabilities = sm.top_candidates(logits[-1], 5)
    assert decoder.tokenizer.decode([int(top[0])]) == word
    assert probabilities[0] == pytest.approx(np.exp(reference()[f"{t}/top_log_p"][0]), abs=1e-4)
    assert probabilities[0] == pytest.approx(p, abs=5e-4)


@pytest.mark.parametrize("t", [0, 1])
def test_greedy_decoding_with_the_cache_writes_what_transformers_generates(
    decoder: LoadedDecoder, t: int
) -> None:
    greedy = reference()[f"{t}/greedy"][:8].tolist()  # the first 8 of the 16 written
    ids = reference()[f"{t}/ids"].tolist()
    d = llama.Decoder(decoder.weights, len(ids) + len(greedy))
    logits = llama.unembed(d.feed(ids), decoder.weights)[-1]
    written = []
    for _ in greedy:
        written.append(int(np.argmax(logits)))
        logits = llama.unembed(d.feed(written[-1:]), decoder.weights)[-1]
    assert written == greedy


def test_heads_switched_off_match_transformers_with_their_slices_zeroed(
    decoder: LoadedDecoder,
) -> None:
    ref = reference()
    ids = ref["1/ids"].tolist()
    off = [(int(layer), int(head)) for layer, head in ref["ablate/heads"]]
    logits, _ = run(decoder.weights, ids, ablate=off)
    log_p = sm.log_softmax(logits[-1].astype(np.float64))
    np.testing.assert_allclose(log_p[ref["ablate/top_ids"]], ref["ablate/top_log_p"], atol=FLOAT32)
    surprisal = sm.surprisal(logits[:-1], np.array(ids[1:]))
    np.testing.assert_allclose(surprisal, ref["ablate/surprisal"], atol=FLOAT32)
    unablated = sm.surprisal(run(decoder.weights, ids)[0][:-1], np.array(ids[1:]))
    assert np.abs(unablated - surprisal).max() > 0.01  # the switch changed something


def test_the_sinks_policy_matches_transformers_with_the_same_4d_mask(
    decoder: LoadedDecoder,
) -> None:
    ref = reference()
    ids = ref["2/ids"].tolist()
    sinks, window = (int(v) for v in ref["sinks/sinks_window"])
    logits, log = run(decoder.weights, ids, dc.CachePolicy("sinks", window, sinks))
    surprisal = sm.surprisal(logits[:-1], np.array(ids[1:]))
    np.testing.assert_allclose(surprisal, ref["sinks/surprisal"], atol=FLOAT32)
    last_rows = np.stack([log.dense[int(layer)][:, -1] for layer in ref["dense_layers"]])
    np.testing.assert_allclose(last_rows, ref["sinks/last_weights"], atol=1e-5)


# ---------------------------------------------------------------- the cache


EVERY_POLICY = pytest.mark.parametrize(
    "policy",
    [dc.FULL, dc.CachePolicy("window", window=5), dc.CachePolicy("sinks", window=5, sinks=2)],
    ids=["full", "window 5", "sinks 2 + window 5"],
)


def visible(n: int, policy: dc.CachePolicy) -> np.ndarray:
    """Written out again: key j ≤ i, within the last w, or among the first s."""
    allowed = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(i + 1):
            near = policy.window is None or i - j < policy.window
            allowed[i, j] = near or j < policy.sinks
    return allowed


@EVERY_POLICY
def test_cached_decoding_equals_the_full_pass_with_the_policy_mask(
    decoder: LoadedDecoder, policy: dc.CachePolicy
) -> None:
    model = decoder.weights
    ids = decoder.tokenizer.encode(text(1)).ids  # 14 tokens: prefill 5, then one by one
    n, prompt = len(ids), 5
    log = llama.AttentionLog(model.config, n, [0, 29])
    d = llama.Decoder(model, n, policy, observers=[log])
    rows = [d.feed(ids[:prompt])]
    for t in range(prompt, n):
        rows.append(d.feed(ids[t : t + 1]))
        assert d.cached_positions.tolist() == policy.kept(t).tolist()
    cached = np.vstack(rows)
    full_log = llama.AttentionLog(model.config, n, [0, 29])
    full = llama.Decoder(model, n, policy, observers=[full_log]).feed(ids)
    np.testing.assert_allclose(cached, full, rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(cached, final_hidden(model, ids, visible(n, policy)), atol=2e-3)
    for layer in (0, 29):
        weights = log.dense[layer]  # (heads, n, n), filled row by row as decoding went
        np.testing.assert_allclose(weights, full_log.dense[layer], atol=1e-5)
        np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)
        assert (weights[:, ~visible(n, policy)] == 0).all()
    per_token = kv_cache_bytes_per_token(30, 3, 64, 4)  # fp32: 46,080 bytes
    assert d.cache_bytes == len(policy.kept(n - 1)) * per_token == 46_080 * len(d.cached_positions)


@EVERY_POLICY
def test_a_decoder_resumed_after_a_shared_prefix_equals_the_full_pass(
    decoder: LoadedDecoder, policy: dc.CachePolicy
) -> None:
    """Another text that begins with the same 9 tokens: resumed from the first one's rows,
    only its own rows are computed, and everything equals its pass from scratch."""
    model, config = decoder.weights, decoder.weights.config
    ids = decoder.tokenizer.encode(text(1)).ids  # 14 tokens
    other = [*ids[:9], *decoder.tokenizer.encode(" the teacher").ids]
    dtype = model.embedding.dtype

    def observers(n: int) -> tuple[llama.AttentionLog, llama.KVRecord, llama.LayerWatch]:
        log = llama.AttentionLog(config, n, [0, 29], lookback=3)
        return log, llama.KVRecord(config, n, dtype), llama.LayerWatch(config, 29, n, dtype)

    first = observers(len(ids))
    llama.Decoder(model, len(ids), policy, observers=first).feed(ids)
    resumed = observers(len(other))
    d = llama.Decoder(model, len(other), policy, observers=resumed)
    d.resume(first[1], 9)
    for mine, earlier in zip(resumed, first, strict=True):
        mine.resume(earlier, 9)  # type: ignore[arg-type]
    assert d.cached_positions.tolist() == policy.kept(8).tolist()
    rows = d.feed(other[9:])
    scratch = observers(len(other))
    full = llama.Decoder(model, len(other), policy, observers=scratch).feed(other)
    np.testing.assert_allclose(rows, full[9:], rtol=2e-4, atol=2e-4)
    (log, kv, watch), (log_0, kv_0, watch_0) = resumed, scratch
    for mine, theirs in zip(log.per_row, log_0.per_row, strict=True):
        np.testing.assert_allclose(mine, theirs, atol=1e-5)
    for layer in (0, 29):
        np.testing.assert_allclose(log.dense[layer], log_0.dense[layer], atol=1e-5)
    np.testing.assert_allclose(kv.k, kv_0.k, atol=2e-4)
    np.testing.assert_allclose(kv.v, kv_0.v, atol=2e-4)
    np.testing.assert_allclose(watch.q, watch_0.q, atol=2e-4)
    np.testing.assert_allclose(watch.x, watch_0.x, atol=2e-4)
    assert d.cached_positions.tolist() == policy.kept(len(other) - 1).tolist()


# ---------------------------------------------------------------- building blocks


def test_grouped_attention_is_each_query_head_against_its_key_value_head() -> None:
    rng = np.random.default_rng(0)
    q, k, v = (
        rng.standard_normal((6, 4, 8)),
        rng.standard_normal((2, 5, 8)),
        rng.standard_normal((2, 5, 8)),
    )
    allowed = dc.CachePolicy("sinks", window=2, sinks=1).visible(np.arange(1, 5), np.arange(5))
    weights, out = llama.grouped_attention(q, k, v, allowed)
    for head in range(6):
        alone = att.attend(q[head], k[head // 3], v[head // 3], allowed)
        np.testing.assert_allclose(weights[head], alone.weights, atol=1e-12)
        np.testing.assert_allclose(out[head], alone.output, atol=1e-12)


def test_weight_on_picks_each_rows_key_and_zero_where_it_is_not_held() -> None:
    weights = np.arange(2 * 3 * 4, dtype=float).reshape(2, 3, 4)  # 2 heads, 3 rows, 4 keys
    keys = np.array([0, 2, 5, 6])
    picked = llama.weight_on(weights, keys, np.array([2, 3, 6]))
    assert picked.tolist() == [[1.0, 0.0, 11.0], [13.0, 0.0, 23.0]]
    both = llama.weight_on(weights, keys, np.array([[2, 3, 6], [0, 0, 5]]))  # two per row
    assert both.tolist() == [picked.tolist(), [[0.0, 4.0, 10.0], [12.0, 16.0, 22.0]]]


def test_silu_and_rms_norm_follow_their_formulas() -> None:
    x = np.array([[-800.0, -1.0, 0.0, 2.0]])
    np.testing.assert_allclose(llama.silu(x), x / (1 + np.exp(-np.clip(x, -50, None))), atol=1e-12)
    gain = np.array([1.0, 2.0, 3.0, 4.0])
    expected = x / np.sqrt((x**2).mean() + 1e-5) * gain
    np.testing.assert_allclose(llama.rms_norm(x, gain, 1e-5), expected, rtol=1e-12)
