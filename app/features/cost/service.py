"""From a cost query to one typed result (CostResult), shared by GET /api/cost and the /cost page.

Fills what the query left out (from a model preset, else the API contract's defaults),
checks what only shows once everything is filled in (kv_heads divides heads, window_layers
fits in layers), and lays out every figure app/math/cost.py computes. Integers stay exact.
"""

from collections.abc import Callable
from fractions import Fraction

import numpy as np

from app.core.errors import InputError, cut
from app.core.i18n import format_number, format_size, gettext, ngettext
from app.core.limits import MAX_SEQ_LEN
from app.core.rules import kv_heads_problem
from app.features.cost.presets import PRESETS, PRESETS_BY_ID, ModelPreset
from app.features.cost.schemas import (
    CostQuery,
    CostResult,
    Curves,
    GpuFit,
    KvSeries,
    PresetInfo,
    ScalingRow,
    Size,
    Sizes,
)
from app.math import cost
from app.math.cost import AttentionConfig

DEFAULT_CONFIG = AttentionConfig(layers=1, heads=1, kv_heads=1, head_dim=128)
DTYPE_OF_BYTES = {
    Fraction(4): "fp32",
    Fraction(2): "fp16",
    Fraction(1): "fp8",
    Fraction(1, 2): "int4",
}
CURVE_POINTS = 41
EXAMPLE_WINDOW = 4096


def _query_error(field: str, msg: str) -> InputError:
    return InputError((field,), msg, source="query")


def find_preset(preset_id: str | None) -> ModelPreset | None:
    if preset_id is None:
        return None
    if preset_id not in PRESETS_BY_ID:
        known = ", ".join(PRESETS_BY_ID)
        raise _query_error(
            "preset",
            gettext("preset “%(preset)s” is not one we know; use one of %(known)s")
            % {"preset": cut(preset_id, 40), "known": known},
        )
    return PRESETS_BY_ID[preset_id]


def element_size(query: CostQuery) -> tuple[Fraction, str | None]:
    """(bytes per element, type name): `dtype` wins, and must agree with bytes_per_element."""
    if query.dtype is None:
        size = Fraction(query.bytes_per_element or 2)
        return size, DTYPE_OF_BYTES.get(size)
    size = Fraction(cost.DTYPE_BITS[query.dtype], 8)
    if query.bytes_per_element is not None and query.bytes_per_element != size:
        raise _query_error(
            "bytes_per_element",
            gettext(
                "bytes_per_element is %(given)s but dtype %(dtype)s stores %(size)s bytes per "
                "element; give only one of them"
            )
            % {
                "given": _number(Fraction(query.bytes_per_element)),
                "dtype": query.dtype,
                "size": _number(size),
            },
        )
    return size, query.dtype


def kv_element_size(query: CostQuery, b: Fraction, dtype: str | None) -> tuple[Fraction, str]:
    """The cache's bytes per element: kv_dtype, else the element type of everything else."""
    if query.kv_dtype is None:
        return b, dtype or f"{_number(b)} bytes"
    return cost.KV_DTYPE_BYTES[query.kv_dtype], query.kv_dtype


def _latent(query: CostQuery, base: AttentionConfig) -> tuple[int | None, int]:
    """(kv_lora_rank, rope_head_dim): the query's, else the preset's; rope needs a rank."""
    if query.rope_head_dim is not None and query.kv_lora_rank is None and base.kv_lora_rank is None:
        raise _query_error(
            "rope_head_dim",
            gettext(
                "rope_head_dim is the width of the RoPE key that multi-head latent attention "
                "caches beside its compressed row; give kv_lora_rank too, or leave "
                "rope_head_dim out"
            ),
        )
    rank = query.kv_lora_rank or base.kv_lora_rank
    rope = query.rope_head_dim if query.rope_head_dim is not None else base.rope_head_dim
    return rank, rope if rank is not None else 0


def resolve_config(query: CostQuery, preset: ModelPreset | None) -> AttentionConfig:
    """The attention configuration: the query's values, else the preset's, else the defaults
    (one head of width 128 in one layer; as many key/value heads as query heads)."""
    base = preset.attention if preset is not None else DEFAULT_CONFIG
    layers = query.layers or base.layers
    heads = query.heads or base.heads
    kv_heads = query.kv_heads or (base.kv_heads if preset is not None else heads)
    head_dim = query.head_dim or base.head_dim
    window = query.window or base.window
    window_layers = query.window_layers or (base.window_layers if window == base.window else None)
    problem = kv_heads_problem(heads, kv_heads)
    if problem:
        raise _query_error("kv_heads", problem)
    if window_layers is not None and window is None:
        raise _query_error(
            "window_layers",
            gettext(
                "window_layers says how many layers use the sliding window, but no window is "
                "set; give window too, or leave window_layers out"
            ),
        )
    if window_layers is not None and window_layers > layers:
        raise _query_error(
            "window_layers",
            gettext(
                "window_layers is %(given)s, more than the model's layer count (%(layers)s); "
                "use at most %(layers)s"
            )
            % {"given": window_layers, "layers": layers},
        )
    if query.sinks and window is None:
        raise _query_error(
            "sinks",
            gettext(
                "sinks = %(sinks)s are tokens a windowed layer keeps beside its window, but no "
                "window is set; give window too, or leave sinks out"
            )
            % {"sinks": query.sinks},
        )
    rank, rope = _latent(query, base)
    sinks = query.sinks or 0
    return AttentionConfig(
        layers, heads, kv_heads, head_dim, window, window_layers, sinks, rank, rope
    )


def _number(value: Fraction) -> str:
    return str(int(value)) if value.denominator == 1 else str(float(value))


def size_of(n_bytes: int) -> Size:
    s = cost.binary_size(n_bytes)
    return Size(bytes=s.bytes, value=s.value, unit=s.unit, text=s.text)


def _grid(lo: int, hi: int, extra: list[int]) -> list[int]:
    """Log-spaced lengths from lo to hi, plus the lengths the markers sit on."""
    points = np.geomspace(lo, hi, CURVE_POINTS).round().astype(int).tolist()
    return sorted({*points, *(x for x in extra if lo <= x <= hi)})


def kv_series(config: AttentionConfig) -> list[tuple[str, AttentionConfig]]:
    """MHA vs GQA vs MQA vs a sliding window (vs latent attention), around the chosen one,
    each under a stable id (the page writes the labels)."""
    plain = AttentionConfig(config.layers, config.heads, config.kv_heads, config.head_dim)
    series = [("mha", _with_kv(plain, config.heads))]
    if config.kind == "MLA":
        return [*series, ("mla", config)]
    if config.kind == "GQA":
        series.append(("gqa", plain))
    if config.heads > 1:
        series.append(("mqa", _with_kv(plain, 1)))
    if config.window is not None:
        series.append(("window", config))
    else:
        windowed = AttentionConfig(
            config.layers, config.heads, config.kv_heads, config.head_dim, EXAMPLE_WINDOW
        )
        series.append(("window", windowed))
    return series


def _with_kv(config: AttentionConfig, kv_heads: int) -> AttentionConfig:
    return AttentionConfig(config.layers, config.heads, kv_heads, config.head_dim)


def compute_cost(query: CostQuery) -> CostResult:
    """The whole /api/cost result."""
    preset = find_preset(query.preset)
    b, dtype = element_size(query)
    kv_b, kv_dtype = kv_element_size(query, b, dtype)
    config = resolve_config(query, preset)
    n, batch = query.seq_len, query.batch
    gpu_bytes = cost.gib_to_bytes(query.gpu_memory_gib)
    weights = query.weight_bytes or 0

    def dense_layer(m: int) -> int:
        return config.score_bytes_per_layer(m, b, batch)

    def kv_at(m: int) -> int:
        return config.kv_cache_bytes(m, kv_b, batch)

    score_bytes_per_head = cost.score_bytes(n, b)
    score_bytes_per_layer = dense_layer(n)
    score_bytes_model = score_bytes_per_layer * config.layers
    row_stats = config.row_stats_bytes_per_layer(n, batch)
    qkvo = config.qkvo_bytes_per_layer(n, b, batch)
    kv_per_token = config.kv_cache_bytes_per_token(kv_b)
    kv_bytes = kv_at(n)
    kv_fit = cost.longest_fitting(kv_at, gpu_bytes, MAX_SEQ_LEN)
    dense_fit = cost.longest_fitting(dense_layer, gpu_bytes, MAX_SEQ_LEN)
    return CostResult(
        seq_len=n,
        heads=config.heads,
        kv_heads=config.kv_heads,
        head_dim=config.head_dim,
        layers=config.layers,
        batch=batch,
        bytes_per_element=float(b) if b.denominator != 1 else int(b),
        bits_per_element=int(b * 8),
        dtype=dtype,
        window=config.window,
        window_layers=config.windowed_layers if config.window is not None else None,
        global_layers=config.global_layers,
        attention=config.kind,
        preset=preset.info() if preset else None,
        # seed 000's table, and beyond
        score_entries_per_head=cost.score_entries(n),
        score_bytes_per_head=score_bytes_per_head,
        score_bytes_per_layer=score_bytes_per_layer,
        score_bytes_model=score_bytes_model,
        row_stats_bytes_per_layer=row_stats,
        qkvo_bytes_per_layer=qkvo,
        prefill_flops_per_head=cost.prefill_flops_per_head(n, config.head_dim),
        prefill_flops=config.prefill_flops(n, batch),
        causal_prefill_flops=config.causal_prefill_flops(n, batch),
        decode_flops_per_head=cost.decode_flops_per_head(n, config.head_dim),
        decode_flops=config.decode_flops(n, batch),
        kv_cache_bytes_per_token=kv_per_token,
        kv_cache_bytes_per_token_global=(
            config.kv_cache_bytes(n, kv_b) - config.kv_cache_bytes(n - 1, kv_b) if n > 1 else None
        ),
        kv_cache_bytes=kv_bytes,
        kv_cached_tokens_windowed=(
            cost.cached_tokens(n, config.window, config.sinks)
            if config.window is not None
            else None
        ),
        kv_dtype=kv_dtype,
        kv_dtype_requested=query.kv_dtype,
        kv_bytes_per_element=float(kv_b),
        kv_bytes_per_element_exact=[kv_b.numerator, kv_b.denominator],
        kv_elements_per_token_layer=cost.kv_elements_per_token_layer(
            config.kv_heads, config.head_dim, config.kv_lora_rank, config.rope_head_dim
        ),
        kv_lora_rank=config.kv_lora_rank,
        rope_head_dim=config.rope_head_dim if config.kv_lora_rank is not None else None,
        sinks=config.sinks if config.window is not None else None,
        weight_bytes=weights,
        fits=kv_bytes + weights <= gpu_bytes,
        max_seq_len=config.max_seq_len(kv_b, batch, gpu_bytes, weights, MAX_SEQ_LEN),
        max_batch=config.max_batch(n, kv_b, gpu_bytes, weights),
        warnings=cost_warnings(query, preset, config, kv_bytes, weights, gpu_bytes),
        gpu=GpuFit(
            memory_gib=query.gpu_memory_gib,
            memory_bytes=gpu_bytes,
            kv_cache_fits=kv_bytes <= gpu_bytes,
            kv_cache_share=kv_bytes / gpu_bytes,
            score_layer_fits=score_bytes_per_layer <= gpu_bytes,
            score_layer_share=score_bytes_per_layer / gpu_bytes,
            longest_kv_fit=kv_fit,
            longest_dense_layer_fit=dense_fit,
        ),
        sizes=Sizes(
            score_bytes_per_head=size_of(score_bytes_per_head),
            score_bytes_per_layer=size_of(score_bytes_per_layer),
            score_bytes_model=size_of(score_bytes_model),
            row_stats_bytes_per_layer=size_of(row_stats),
            qkvo_bytes_per_layer=size_of(qkvo),
            kv_cache_bytes_per_token=size_of(kv_per_token),
            kv_cache_bytes=size_of(kv_bytes),
            weight_bytes=size_of(weights),
            kv_and_weights=size_of(kv_bytes + weights),
            gpu_memory=size_of(gpu_bytes),
        ),
        scaling=[
            ScalingRow(
                seq_len=m,
                score_entries_per_head=cost.score_entries(m),
                score_bytes_per_head=cost.score_bytes(m, b),
                size=size_of(cost.score_bytes(m, b)),
            )
            for m in (n, 2 * n, 4 * n)
            if m <= MAX_SEQ_LEN
        ],
        curves=curves(config, n, b, kv_b, batch, [kv_fit, dense_fit]),
    )


def curves(
    config: AttentionConfig,
    n: int,
    b: Fraction,
    kv_b: Fraction,
    batch: int,
    capacities: list[int],
) -> Curves:
    """Every chart's series against sequence length, sampled on a log grid that reaches past
    the chosen length and the lengths where the GPU fills up."""
    fits = [m for m in capacities if m < MAX_SEQ_LEN]
    lo = max(1, min(n, 128) // 2)
    hi = min(MAX_SEQ_LEN, max(16 * n, 131_072, *(2 * m for m in fits)))
    ns = _grid(lo, hi, [n, *fits])

    def over(fn: Callable[[int], int]) -> list[int]:
        return [fn(m) for m in ns]

    kv = kv_series(config)
    return Curves(
        seq_len=ns,
        dense_score_bytes_per_layer=over(lambda m: config.score_bytes_per_layer(m, b, batch)),
        row_stats_bytes_per_layer=over(lambda m: config.row_stats_bytes_per_layer(m, batch)),
        qkvo_bytes_per_layer=over(lambda m: config.qkvo_bytes_per_layer(m, b, batch)),
        kv_cache_bytes=[
            KvSeries(
                id=series_id,
                attention=c.kind,
                kv_heads=c.kv_heads,
                window=c.window,
                sinks=c.sinks if c.window is not None else None,
                windowed_layers=c.windowed_layers,
                latent_width=(c.kv_lora_rank + c.rope_head_dim) if c.kind == "MLA" else None,
                bytes=over(lambda m, c=c: c.kv_cache_bytes(m, kv_b, batch)),
            )
            for series_id, c in kv
        ],
        kv_chosen=next(series_id for series_id, c in kv if c == config),
    )


def cost_warnings(
    query: CostQuery,
    preset: ModelPreset | None,
    config: AttentionConfig,
    kv_bytes: int,
    weights: int,
    gpu_bytes: int,
) -> list[str]:
    """Sentences about answers that are exact but may not mean what the reader hopes."""
    warnings = []
    if preset is not None and preset.max_context and query.seq_len > preset.max_context:
        warnings.append(
            gettext(
                "seq_len is %(n)s but %(model)s was built for at most %(max)s tokens; the "
                "cache size is still counted, but the model was never trained to use positions "
                "that far."
            )
            % {
                "n": format_number(query.seq_len),
                "model": preset.name,
                "max": format_number(preset.max_context),
            }
        )
    if weights > gpu_bytes:
        warnings.append(
            gettext("The weights alone (%(w)s) are larger than the GPU memory (%(gpu)s).")
            % {"w": format_size(weights), "gpu": format_size(gpu_bytes)}
        )
    elif kv_bytes + weights > gpu_bytes:
        warnings.append(
            gettext(
                "The KV cache and the weights (%(total)s) do not fit in the GPU memory "
                "(%(gpu)s): shorten the sequence, shrink the batch or quantize the cache."
            )
            % {
                "total": format_size(kv_bytes + weights),
                "gpu": format_size(gpu_bytes),
            }
        )
    if config.window is not None and config.global_layers == 0:
        warnings.append(
            ngettext(
                "Every layer is windowed, so the cache stops growing at %(w)s token: any "
                "length fits once that much does.",
                "Every layer is windowed, so the cache stops growing at %(w)s tokens: any "
                "length fits once that much does.",
                config.window + config.sinks,
            )
            % {"w": format_number(config.window + config.sinks)}
        )
    return warnings


def preset_list() -> list[PresetInfo]:
    """GET /api/cost/models."""
    return [p.info() for p in PRESETS]
