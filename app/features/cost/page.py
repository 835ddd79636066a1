"""The /cost page: its figures, its form and everything it shows, from one /api/cost result.

Reads finished results (app/features/cost/service.py) and lays them out; computes no cost formula.
"""

from typing import Any
from urllib.parse import urlencode

from pydantic import ValidationError

from app.core.errors import BusyError, InputError, validation_errors
from app.core.i18n import N_, format_number, format_size, gettext, ngettext
from app.core.limits import MAX_SEQ_LEN
from app.features.cost.measure import Measurement, MeasurementCache
from app.features.cost.presets import PRESETS_BY_ID
from app.features.cost.schemas import CostQuery, CostResult, KvSeries
from app.features.cost.service import compute_cost, preset_list
from app.math.cost import DTYPE_BITS, QUANT_BLOCKS
from app.web.figures import Marker, Series, byte_ticks, log_log_lines


def _length_markers(result: CostResult, field: str, fit: str, fills: str) -> list[Marker]:
    """A marker at the chosen length, and one where the thing drawn fills the GPU (when on
    the chart); `fills` says so, with %(n)s for the length."""
    n = result.seq_len
    text = f"n = {format_number(n)}: {format_size(getattr(result.sizes, field).bytes)}"
    markers = [Marker(gettext("your length"), n, getattr(result, field), text)]
    m = getattr(result.gpu, fit)
    if m < result.curves.seq_len[-1]:
        gpu_bytes = result.gpu.memory_bytes
        full = fills % {"n": format_number(m)}
        markers.append(Marker(gettext("GPU full"), m, gpu_bytes, full, "diamond"))
    return markers


def _bytes_chart(
    result: CostResult, series: list[Series], title: str, markers: list[Marker]
) -> dict[str, Any]:
    """Bytes against length on log axes, with the GPU's memory as a dotted line."""
    ns = result.curves.seq_len
    gpu_bytes = result.gpu.memory_bytes
    gpu_name = gettext("GPU memory (%(size)s)") % {"size": format_size(result.gpu.memory_bytes)}
    values = [v for s in series for v in s.y if v > 0] + [gpu_bytes]
    return log_log_lines(
        ns,
        [*series, Series(gpu_name, [gpu_bytes] * len(ns), dash="dot")],
        title,
        gettext("bytes"),
        markers,
        y_ticks=byte_ticks(min(values), max(values)),
    )


def _sized(name: str, values: list[int], dash: str = "solid") -> Series:
    return Series(name, values, [format_size(v) for v in values], dash)


# The form's element types are those the cost formulas know (DTYPE_BITS); these are their names.
DTYPE_LABELS = {
    "fp32": N_("fp32, 4 bytes"),
    "fp16": N_("fp16, 2 bytes"),
    "bf16": N_("bf16, 2 bytes"),
    "fp8": N_("fp8, 1 byte"),
    "int4": N_("int4, half a byte"),
}


def form_limits() -> dict[str, Any]:
    """What the form's fields accept, from the limits and the formulas (never typed twice)."""
    return {
        "max_seq_len": MAX_SEQ_LEN,
        "dtypes": [(name, gettext(DTYPE_LABELS[name])) for name in DTYPE_BITS],
    }


def kv_label(series: KvSeries, result: CostResult) -> str:
    """A compared configuration's legend, in the reader's language."""
    if series.id == "mha":
        return gettext("MHA (g = h = %(h)s)") % {"h": format_number(result.heads)}
    if series.id == "mla":
        return gettext("MLA (r + d_rope = %(w)s)") % {"w": format_number(series.latent_width)}
    if series.id in ("gqa", "mqa"):
        return f"{series.attention} (g = {format_number(series.kv_heads)})"
    values = {
        "kind": series.attention,
        "g": format_number(series.kv_heads),
        "w": format_number(series.window),
        "s": format_number(series.sinks or 0),
        "l": format_number(series.windowed_layers),
        "layers": format_number(result.layers),
    }
    if result.window is None:  # the example window, beside a model without one
        return gettext("%(kind)s (g = %(g)s), window %(w)s on every layer") % values
    if series.sinks:
        return (
            ngettext(
                "%(kind)s (g = %(g)s), window %(w)s + s = %(s)s on %(l)s of %(layers)s layer",
                "%(kind)s (g = %(g)s), window %(w)s + s = %(s)s on %(l)s of %(layers)s layers",
                result.layers,
            )
            % values
        )
    return (
        ngettext(
            "%(kind)s (g = %(g)s), window %(w)s on %(l)s of %(layers)s layer",
            "%(kind)s (g = %(g)s), window %(w)s on %(l)s of %(layers)s layers",
            result.layers,
        )
        % values
    )


def cost_figures(result: CostResult) -> dict[str, dict[str, Any]]:
    """Score memory and KV cache against sequence length, with the chosen length and the
    GPU's capacity marked."""
    curves = result.curves
    score_series = [
        _sized(
            gettext("dense attention: n × n scores of every head"),
            curves.dense_score_bytes_per_layer,
        ),
        _sized(
            gettext("memory-efficient exact kernel: 8 bytes of row statistics per query and head"),
            curves.row_stats_bytes_per_layer,
        ),
        _sized(
            gettext("Q, K, V and output (both kernels need them)"),
            curves.qkvo_bytes_per_layer,
            "dash",
        ),
    ]
    kv_series = [
        _sized(kv_label(s, result), s.bytes, "solid" if s.id == curves.kv_chosen else "dash")
        for s in curves.kv_cache_bytes
    ]
    return {
        "scores": _bytes_chart(
            result,
            score_series,
            ngettext(
                "Attention memory of one layer (%(heads)s head × batch %(batch)s)",
                "Attention memory of one layer (%(heads)s heads × batch %(batch)s)",
                result.heads,
            )
            % {"heads": format_number(result.heads), "batch": format_number(result.batch)},
            _length_markers(
                result,
                "score_bytes_per_layer",
                "longest_dense_layer_fit",
                gettext("dense scores fill the GPU at n = %(n)s"),
            ),
        ),
        "kv": _bytes_chart(
            result,
            kv_series,
            ngettext(
                "KV cache, %(layers)s layer × batch %(batch)s",
                "KV cache, %(layers)s layers × batch %(batch)s",
                result.layers,
            )
            % {"layers": format_number(result.layers), "batch": format_number(result.batch)},
            _length_markers(
                result,
                "kv_cache_bytes",
                "longest_kv_fit",
                gettext("the KV cache fills the GPU at n = %(n)s"),
            ),
        ),
    }


def measure_figure(measurement: Measurement) -> dict[str, Any]:
    """Measured seconds per length against the fitted c·n²."""
    rows = measurement.rows
    ns = [r.n for r in rows]
    ms = [r.seconds * 1000 for r in rows]
    fitted = [r.fitted_seconds * 1000 for r in rows]
    return log_log_lines(
        ns,
        [
            Series(
                gettext("measured on this server"), ms, [f"{format_number(t, 2)} ms" for t in ms]
            ),
            Series(
                gettext("fitted c·n²"),
                fitted,
                [f"{format_number(t, 2)} ms" for t in fitted],
                dash="dash",
            ),
        ],
        gettext("Dense attention, one head: time against length"),
        gettext("milliseconds"),
        mode="lines+markers",
    )


FORM_FIELDS = (
    "seq_len",
    "batch",
    "layers",
    "heads",
    "kv_heads",
    "head_dim",
    "window",
    "window_layers",
    "dtype",
    "gpu_memory_gib",
    "kv_dtype",
    "kv_lora_rank",
    "rope_head_dim",
    "sinks",
    "weight_bytes",
)
KV_DTYPES = ("fp32", "fp16", "bf16", "fp8", "int4", "q8_0", "q4_0")


def _form_values(result: CostResult) -> dict[str, str]:
    """The inputs as the form shows them: the values the result was computed from."""
    values = {name: getattr(result, name, None) for name in FORM_FIELDS}
    values["dtype"] = result.dtype or "fp16"
    values["gpu_memory_gib"] = f"{result.gpu.memory_gib:g}"
    values["kv_dtype"] = result.kv_dtype_requested
    values["weight_bytes"] = result.weight_bytes or None
    values["sinks"] = result.sinks or None
    return {k: "" if v is None else str(v) for k, v in values.items()}


def kv_element_text(result: CostResult) -> str:
    """b_kv as the reader can check it: 34/32 for q8_0 (bytes per block / values), else b."""
    if result.kv_dtype in QUANT_BLOCKS:
        size, count = QUANT_BLOCKS[result.kv_dtype]
        return f"{size}/{count}"
    return format_number(result.kv_bytes_per_element)


def fit_view(result: CostResult) -> dict[str, Any]:
    """The "what fits" verdict: cache + weights against the GPU, the longest n and the largest
    batch, each with the numbers of its formula (the values come from the service)."""
    gpu, n, batch = result.gpu, result.seq_len, result.batch
    one = result.kv_cache_bytes // batch if batch else 0
    free = gpu.memory_bytes - result.weight_bytes
    return {
        "fits": result.fits,
        "total": format_size(result.sizes.kv_and_weights.bytes),
        "weights": format_size(result.sizes.weight_bytes.bytes),
        "max_seq_len": result.max_seq_len,
        "max_batch": result.max_batch,
        "unbounded": result.max_seq_len >= MAX_SEQ_LEN,
        "batch_numbers": f"⌊({format_number(gpu.memory_bytes)} − "
        f"{format_number(result.weight_bytes)}) / {format_number(one)}⌋",
        "length_numbers": f"KV({format_number(result.max_seq_len)}) × {batch} + "
        f"{format_number(result.weight_bytes)} ≤ {format_number(gpu.memory_bytes)}",
        "free": format_number(max(free, 0)),
        "seq_len": format_number(n),
    }


async def cost_measurement(
    params: dict[str, str], measurements: MeasurementCache
) -> tuple[dict[str, Any] | None, str | None]:
    """The measurement /cost shows, and why it is missing if it is.

    `measure` in the URL (taken out of params) runs or awaits the timing; without it the
    page shows a finished run if there is one.
    """
    if params.pop("measure", None) is None:
        return measurements.result, None
    try:
        return await measurements.get(), None
    except BusyError as exc:
        return None, exc.msg


# The form's fields that a preset fills: changing one means the numbers are no longer that
# model's (the workload, element types and GPU fields may change under any preset).
PRESET_FIELDS = (
    "layers",
    "heads",
    "kv_heads",
    "head_dim",
    "window",
    "window_layers",
    "kv_lora_rank",
    "rope_head_dim",
    "sinks",
)


def still_the_preset(params: dict[str, str]) -> dict[str, str]:
    """The query with its preset kept while every preset field given still holds that
    model's value. Once one differs the preset goes and its values are written out in its
    place, so every number stays as it was; only the claim that they are that model's
    goes."""
    preset = params.get("preset")
    if not preset or preset not in PRESETS_BY_ID:
        return params
    own = _form_values(compute_cost(CostQuery(preset=preset)))
    if all(params.get(name, "") in ("", own[name]) for name in PRESET_FIELDS):
        return params
    filled = {name: own[name] for name in PRESET_FIELDS if own[name]}
    return filled | {k: v for k, v in params.items() if k != "preset" and v != ""}


def cost_page_context(
    params: dict[str, str], measurement: Measurement | None, measure_busy: str | None
) -> tuple[dict[str, Any], int]:
    """Everything /cost shows, and its status: 422 with the problems when the input is wrong.

    params is the query of /api/cost; the measurement comes from `cost_measurement`. The
    page keeps saying which preset its numbers started from until a preset field changes.
    """
    params = still_the_preset(params)
    context: dict[str, Any] = {
        "presets": preset_list(),
        "limits": form_limits(),
        "errors": [],
        "result": None,
        "kv_dtypes": KV_DTYPES,
    }
    status = 200
    try:
        result = compute_cost(CostQuery.model_validate(params))
        context.update(result=result, form=_form_values(result), figures=cost_figures(result))
        context.update(kv_element=kv_element_text(result), fit=fit_view(result))
        context["kv_dtypes"] = KV_DTYPES
        context["query_string"] = urlencode({k: v for k, v in context["form"].items() if v != ""})
    except ValidationError as exc:
        context.update(errors=validation_errors(exc.errors()), form=params)
        status = 422
    except InputError as exc:
        context.update(errors=[{"loc": list(exc.loc), "msg": exc.msg}], form=params)
        status = 422
    context["selected_preset"] = params.get("preset", "")
    context.update(measurement=measurement, measure_busy=measure_busy)
    if measurement:
        context["measure_figure"] = measure_figure(measurement)
    return context, status
