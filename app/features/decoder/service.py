"""From a DecoderRequest to the /api/decoder result: the prompt prefilled once, the new tokens
decoded one at a time against every layer's KV cache, and what the heads did on the way."""

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cache
from typing import Literal

import numpy as np
from threadpoolctl import ThreadpoolController

from app.core.budget import check_answer
from app.core.errors import InputError
from app.core.i18n import gettext
from app.core.limits import MAX_ALL_WEIGHTS_TOKENS, MAX_PROMPT_TOKENS
from app.features.decoder.prefill import Prefilled, PrefillKey, prefills
from app.features.decoder.results import (
    CacheUsed,
    Candidate,
    DecoderHead,
    DecoderInfo,
    DecoderResult,
    DecoderRole,
    KVCacheSize,
    RepeatTest,
    Step,
)
from app.features.decoder.schemas import DecoderRequest
from app.features.decoder.store import LoadedDecoder, decoder_store
from app.features.decoder.tokenizer import piece_text
from app.features.stages.results import StageFields, query_breakdown
from app.features.stages.service import check_index
from app.math import attention as att
from app.math import decoding as dc
from app.math import llama
from app.math import roles as rl
from app.math import sampling as sm
from app.math.cost import kv_cache_bytes_per_token
from app.settings import Settings

LOGIT_ROWS = 64  # prompt rows unembedded at once: 64 × 49,152 logits, 12.6 MB in float32
# ONE_BLAS_THREAD: a process that shares its cores with others (the other workers) computes
# with one BLAS thread: two OpenBLAS threads wait for each other, spinning, far longer than
# they compute once the cores are busy (bench/bench_decoder.py: a 32-token prefill took 0.2 s
# with one thread and 9.5 s with two on a loaded machine). The limit is process-wide while it
# holds; one request runs at a time in the work thread.


@cache
def blas_controller() -> ThreadpoolController:
    """Made once per process: making one inspects every loaded library, which took a quarter
    of a second per request on a busy machine."""
    return ThreadpoolController()


def one_blas_thread() -> AbstractContextManager[object]:
    """BLAS limited to one thread while the block runs (ONE_BLAS_THREAD)."""
    return blas_controller().limit(limits=1, user_api="blas")


def loaded_decoder(settings: Settings) -> LoadedDecoder:
    """The decoder of these settings, waiting a little while it loads (then 503)."""
    store = decoder_store(settings.decoder_gguf, settings.cache_dir)
    return store.get(settings.decoder_wait_seconds)


async def ready_decoder(settings: Settings) -> LoadedDecoder:
    """The same, awaited without holding a thread."""
    store = decoder_store(settings.decoder_gguf, settings.cache_dir)
    return await store.ready(settings.decoder_wait_seconds)


def model_info(loaded: LoadedDecoder) -> DecoderInfo:
    c = loaded.weights.config
    return DecoderInfo(
        loaded.name, c.layers, c.heads, c.kv_heads, c.d_head, c.d_model, c.vocab, c.context,
        c.rope_base, loaded.stored, loaded.source, c.kv_groups(),
    )  # fmt: skip


def piece(loaded: LoadedDecoder, token_id: int) -> str:
    return piece_text(loaded.tokenizer.id_to_token(token_id))


def candidates(loaded: LoadedDecoder, logits: np.ndarray, top: int) -> list[Candidate]:
    ids, p = sm.top_candidates(logits, top)
    return [Candidate(piece(loaded, int(i)), int(i), float(q)) for i, q in zip(ids, p, strict=True)]


def prompt_ids(req: DecoderRequest, loaded: LoadedDecoder) -> list[int]:
    """The prompt's token ids: the text as the model's tokenizer cuts it, or the induction
    test's random tokens (no control token, none twice) followed by the same tokens again."""
    if req.repeat_random is not None:
        spec = req.repeat_random
        ordinary = np.setdiff1d(np.arange(loaded.weights.config.vocab), list(loaded.control_ids))
        drawn = np.random.default_rng(spec.seed).choice(ordinary, spec.length, replace=False)
        return [int(i) for i in drawn] * 2
    ids = loaded.tokenizer.encode(req.text or "").ids
    if len(ids) > MAX_PROMPT_TOKENS:
        raise InputError(
            ("text",),
            gettext(
                "text makes %(n)s tokens but the decoder reads at most %(max)s at once here; "
                "shorten it"
            )
            % {"n": len(ids), "max": MAX_PROMPT_TOKENS},
        )
    return ids


def check_request(req: DecoderRequest, config: llama.LlamaConfig, n: int) -> None:
    """Indices within the model and the sequence; the weights of every layer only when short."""
    check_index("layer", req.layer, config.layers, "layers")
    check_index("head", req.head, config.heads, "query heads in each layer")
    check_index("query", req.query, n, "tokens (the prompt and the tokens to generate)")
    for i, (layer, head) in enumerate(req.ablate):
        if layer >= config.layers or head >= config.heads:
            raise InputError(
                ("ablate", i),
                gettext(
                    "ablate[%(i)s] is [%(layer)s, %(head)s] but the model has layers 0 to "
                    "%(last_layer)s and query heads 0 to %(last_head)s in each; pick a head that "
                    "exists"
                )
                % {"i": i, "layer": layer, "head": head, "last_layer": config.layers - 1,
                   "last_head": config.heads - 1},
            )  # fmt: skip
    if req.weights == "all" and n > MAX_ALL_WEIGHTS_TOKENS:
        raise InputError(
            ("weights",),
            gettext(
                'weights "all" sends every layer\'s %(heads)s maps of n × n weights, so it is '
                "offered for at most %(max)s tokens; this request has %(n)s (prompt and "
                'generate together); ask for one layer with weights "layer", or shorten it'
            )
            % {"heads": config.heads, "max": MAX_ALL_WEIGHTS_TOKENS, "n": n},
        )


@dataclass(frozen=True)
class Resumed:
    """An earlier request's prompt sharing the first `rows` tokens with this one."""

    kept: Prefilled
    rows: int


def prompt_rows(
    hidden: np.ndarray, ids: list[int], model: llama.LlamaWeights, earlier: Resumed | None
) -> tuple[list[float | None], np.ndarray, np.ndarray]:
    """−ln p of each prompt token after the ones before it (None for the first), each row's
    normaliser (ln Σ exp of its logits), and the logits after the last token. The rows an
    earlier request computed keep their values; the new ones are unembedded a block at a
    time (the last row again when none is new: its logits are not kept)."""
    n = len(ids)
    r = 0 if earlier is None else earlier.rows
    values: list[float | None] = [None]
    normaliser = np.empty(n, dtype=hidden.dtype)
    if earlier is not None:
        values, normaliser[:r] = earlier.kept.surprisal[:r], earlier.kept.normaliser[:r]
    if 0 < r < n:  # token r after the kept row r − 1: its normaliser and one dot product
        logit = hidden[r - 1] @ model.embedding[ids[r]]
        values = [*values, float(sm.surprisal_of(normaliser[r - 1], logit))]
    logits = np.empty(0)
    for start in range(min(r, n - 1), n, LOGIT_ROWS):
        logits = llama.unembed(hidden[start : start + LOGIT_ROWS], model)  # (b, vocab)
        normaliser[start : start + len(logits)] = sm.log_normaliser(logits)
        targets = np.asarray(ids[start + 1 : start + 1 + LOGIT_ROWS], dtype=np.int64)
        picked = logits[np.arange(len(targets)), targets]
        values = [*values, *sm.surprisal_of(normaliser[start : start + len(targets)], picked)]
    return [None if v is None else float(v) for v in values], normaliser, logits[-1]


def head_roles(log: llama.AttentionLog, n: int) -> list[list[DecoderRole]]:
    means = rl.causal_role_means(
        log.previous[..., :n], log.itself[..., :n], log.first[..., :n], log.entropy[..., :n],
        log.visible[:n],
    )  # fmt: skip
    named = {"previous": means.previous, "self": means.itself, "first": means.first,
             "entropy": means.entropy}  # fmt: skip
    layers, heads = means.entropy.shape
    return [
        [
            DecoderRole(
                **{k: float(v[i, j]) for k, v in named.items()}, labels=means.labels((i, j))
            )
            for j in range(heads)
        ]
        for i in range(layers)
    ]


def cache_capacity(policy: dc.CachePolicy, prompt: int, n: int) -> int:
    """Rows each layer's cache buffer needs: the prompt at once, then what the policy keeps
    plus the new row before the oldest is dropped."""
    if policy.capacity is None:
        return n
    return min(n, max(prompt, policy.capacity + 1))


def compute_decoder(
    req: DecoderRequest,
    settings: Settings,
    check: Callable[[], None] = llama.keep_going,
    remember: bool = True,
) -> DecoderResult:
    """The whole /api/decoder result for one request, with one BLAS thread (ONE_BLAS_THREAD).
    `check` is called between layers and may raise to abandon the work. `remember`: keep
    the prompt's rows for the next request that begins the same way (app/features/decoder/
    prefill.py); a run nobody types on (the page's background runs) would only evict the
    prompts that are being typed."""
    with one_blas_thread():
        return decode_request(req, settings, check, remember)


@dataclass
class Run:
    """What decoding one request produced: the whole sequence, its surprisal, the logits
    after its last token, the generated steps, the decoder holding the caches, and its
    prompt's rows for the next request that begins the same way."""

    ids: list[int]
    surprisal: list[float | None]
    logits: np.ndarray  # (vocab,) after the last token
    steps: list[Step]
    stopped: Literal["length", "end"] | None
    decoder: llama.Decoder
    prefilled: Prefilled


@dataclass(frozen=True)
class Observed:
    """What watches the layers as they compute, each able to resume from an earlier one."""

    log: llama.AttentionLog
    kv: llama.KVRecord
    watch: llama.LayerWatch | None

    @property
    def observers(self) -> list[llama.Observer]:
        return [self.log, self.kv] if self.watch is None else [self.log, self.kv, self.watch]

    def prompt_rows(self, config: llama.LlamaConfig, n: int) -> "Observed":
        """A copy of positions 0 … n − 1 alone: what a kept prompt needs, without the rows
        made for the tokens generated after it (a 64-token generation would keep several
        times the prompt's bytes)."""
        log = llama.AttentionLog(config, n, list(self.log.dense), self.log.lookback)
        log.resume(self.log, n)
        kv = llama.KVRecord(config, n, self.kv.k.dtype)
        kv.resume(self.kv, n)
        watch = None
        if self.watch is not None:
            watch = llama.LayerWatch(config, self.watch.layer, n, self.watch.x.dtype)
            watch.resume(self.watch, n)
        return Observed(log, kv, watch)

    def resume(self, decoder: llama.Decoder, earlier: Resumed) -> None:
        kept, r = earlier.kept, earlier.rows
        decoder.resume(kept.kv, r)
        self.log.resume(kept.log, r)
        self.kv.resume(kept.kv, r)
        if self.watch is not None and kept.watch is not None:
            self.watch.resume(kept.watch, r)


def decode(
    req: DecoderRequest,
    loaded: LoadedDecoder,
    ids: list[int],
    decoder: llama.Decoder,
    observed: Observed,
    earlier: Resumed | None,
) -> Run:
    """Prefill the prompt (after the rows an earlier request shares with it), then generate
    one token at a time, each step's candidates kept."""
    model = loaded.weights
    hidden = np.empty((len(ids), model.config.d_model), dtype=model.embedding.dtype)
    r = 0
    if earlier is not None:
        observed.resume(decoder, earlier)
        r = earlier.rows
        hidden[:r] = earlier.kept.hidden[:r]
    if r < len(ids):
        hidden[r:] = decoder.feed(ids[r:])
    surprisal, normaliser, logits = prompt_rows(hidden, ids, model, earlier)
    rows = observed if req.generate == 0 else observed.prompt_rows(model.config, len(ids))
    prefilled = Prefilled(tuple(ids), rows.kv, rows.log, rows.watch, hidden, normaliser, surprisal)
    sampler = sm.Sampler(**req.sampling.model_dump())
    run = Run(list(ids), list(surprisal), logits, [], None, decoder, prefilled)
    for _ in range(req.generate):
        top = candidates(loaded, run.logits, req.top)
        token, p_sampled = sampler.choose(run.logits)
        p = float(np.exp(sm.log_softmax(run.logits.astype(np.float64))[token]))
        run.steps.append(
            Step(
                token=piece(loaded, token), id=token, p=p, p_sampled=p_sampled, top=top,
                cached_positions=decoder.cached_positions,
            )
        )  # fmt: skip
        run.ids.append(token)
        run.surprisal.append(-float(np.log(p)))
        run.logits = llama.unembed(decoder.feed([token]), model)[0]
        run.stopped = "end" if token in loaded.end_ids else "length"
        if run.stopped == "end":
            break
    return run


def every_head_on(
    req: DecoderRequest, loaded: LoadedDecoder, run: Run, policy: dc.CachePolicy
) -> dict[str, object]:
    """With heads switched off: the same sequence with every head on, its top candidates
    and the probability it gives each candidate of `next`."""
    model = loaded.weights
    whole = llama.Decoder(model, len(run.ids), policy, check=run.decoder.check)
    logits = llama.unembed(whole.feed(run.ids)[-1:], model)[0]
    p = np.exp(sm.log_softmax(logits.astype(np.float64)))
    ids, _ = sm.top_candidates(run.logits, req.top)
    return {
        "unablated_next": candidates(loaded, logits, req.top),
        "unablated_p": [float(p[i]) for i in ids],
    }


def decode_request(
    req: DecoderRequest, settings: Settings, check: Callable[[], None], remember: bool
) -> DecoderResult:
    loaded = loaded_decoder(settings)
    model = loaded.weights
    config = model.config
    prompt = prompt_ids(req, loaded)
    longest = len(prompt) + req.generate
    check_request(req, config, longest)
    layer = req.shown_layer
    dense = {"none": [], "layer": [layer], "all": list(range(config.layers))}[req.weights]
    shape = (config.layers, config.heads, config.d_model, config.d_head)
    size = DecoderResult.answer_bytes(
        longest, req.generate, req.top, shape, len(dense), req.head is not None
    )
    check_answer(size, settings.answer_budget_bytes, ("text", "generate", "weights"))

    policy = req.cache.policy_used()
    length = req.repeat_random.length if req.repeat_random else None
    lookback = None if length is None else length - 1
    dtype = model.embedding.dtype
    log = llama.AttentionLog(config, longest, dense, lookback)
    watch = llama.LayerWatch(config, layer, longest, dtype) if req.head is not None else None
    observed = Observed(log, llama.KVRecord(config, longest, dtype), watch)
    off = sorted({(layer, head) for layer, head in req.ablate})
    capacity = cache_capacity(policy, len(prompt), longest)
    decoder = llama.Decoder(model, capacity, policy, off, observed.observers, check)
    key = PrefillKey(
        id(model), policy, tuple(off), tuple(dense), None if watch is None else layer, lookback
    )
    found = prefills.longest(key, prompt)
    run = decode(req, loaded, prompt, decoder, observed, found and Resumed(*found))
    if remember:
        prefills.keep(key, run.prefilled)
    n = len(run.ids)

    extra: dict[str, object] = {}
    if req.repeat_random is not None and log.back is not None:
        spec = req.repeat_random
        extra["induction"] = rl.induction_scores(log.back[..., :n], spec.length)
        first, second = run.surprisal[1 : spec.length], run.surprisal[spec.length : 2 * spec.length]
        extra["repeat"] = RepeatTest(
            spec.length, spec.seed, float(np.mean(first)), float(np.mean(second))
        )
    if req.weights == "layer":
        extra.update(weights=log.dense[layer][:, :n, :n], weights_layer=layer)
    elif req.weights == "all":
        extra["weights"] = np.stack([log.dense[i][:, :n, :n] for i in dense])
    if watch is not None:
        extra["stages"] = head_stages(req, loaded, watch, policy, run.ids)
        extra["kv_head"] = config.kv_head(req.head)
    if off:
        extra.update(every_head_on(req, loaded, run, policy))

    cached = decoder.cached_positions
    itemsize = model.embedding.dtype.itemsize
    return DecoderResult(
        model=model_info(loaded),
        tokens=[piece(loaded, i) for i in run.ids],
        token_ids=np.array(run.ids),
        text=loaded.tokenizer.decode(run.ids, skip_special_tokens=False),
        prompt_length=len(prompt),
        surprisal=run.surprisal,
        next=candidates(loaded, run.logits, req.top),
        steps=run.steps,
        stopped=run.stopped,
        kv_cache=KVCacheSize(
            dtype=str(model.embedding.dtype),
            bytes_per_token=decoder.cache_bytes // len(cached),
            bytes=decoder.cache_bytes,
            positions=len(cached),
            layers=config.layers,
            kv_heads=config.kv_heads,
            d_head=config.d_head,
            formula_bytes_per_token=kv_cache_bytes_per_token(
                config.layers, config.kv_heads, config.d_head, itemsize
            ),
            allocated_bytes=decoder.allocated_bytes,
        ),
        cache=CacheUsed(policy.policy, policy.window, policy.sinks),
        ablate=off,
        roles=head_roles(log, n),
        **extra,
    )


def head_stages(
    req: DecoderRequest,
    loaded: LoadedDecoder,
    watch: llama.LayerWatch,
    policy: dc.CachePolicy,
    ids: list[int],
) -> DecoderHead:
    """One query head's stages over the whole sequence, from the rows its layer computed."""
    config = loaded.weights.config
    head = req.head or 0
    kv = config.kv_head(head)
    n = len(ids)
    q, k, v = watch.q[head, :n], watch.k[kv, :n], watch.v[kv, :n]
    stages = att.attend(q, k, v, policy.mask(n))
    fields = StageFields.of(stages)
    tokens = [piece(loaded, i) for i in ids]
    query = n - 1 if req.query is None else req.query
    check_index("query", query, n, "tokens once generation ended at an end token")
    return DecoderHead(
        **fields.fields(),
        layer=watch.layer,
        head=head,
        kv_head=kv,
        d_head=config.d_head,
        scale_factor=stages.scale_factor,
        ablated=(watch.layer, head) in {tuple(pair) for pair in req.ablate},
        x=watch.x[:n],
        query=query_breakdown(tokens, fields, query),
    )
