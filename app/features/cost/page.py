"""What /cost shows for one state: its charts, its form and every figure, from one /api/cost
result (app/features/cost/service.py). Lays numbers out; computes no cost formula."""

from dataclasses import dataclass

from app.core.errors import BusyError, InputError
from app.core.i18n import N_, format_number, format_size, gettext, ngettext
from app.core.limits import MAX_SEQ_LEN
from app.features.cost.form import CostForm
from app.features.cost.measure import Measurement, MeasurementCache
from app.features.cost.presets import PRESETS_BY_ID
from app.features.cost.schemas import CostQuery, CostResult, KvSeries, PresetInfo
from app.features.cost.service import compute_cost, preset_list
from app.figures.charts import Chart, Dash, Marker, Series, byte_ticks, log_log_lines
from app.math.cost import DTYPE_BITS, QUANT_BLOCKS
from app.web.pages import Page, Problem, state_query

# ---------------------------------------------------------------- the charts


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
    chart_id: str, result: CostResult, series: list[Series], title: str, markers: list[Marker]
) -> Chart:
    """Bytes against length on log axes, with the GPU's memory as a dotted line."""
    ns = result.curves.seq_len
    gpu_bytes = result.gpu.memory_bytes
    gpu_name = gettext("GPU memory (%(size)s)") % {"size": format_size(result.gpu.memory_bytes)}
    values = [v for s in series for v in s.y if v > 0] + [gpu_bytes]
    return log_log_lines(
        chart_id,
        ns,
        [*series, Series(gpu_name, [gpu_bytes] * len(ns), dash="dot")],
        title=title,
        y_title=gettext("bytes"),
        x_title=gettext("sequence length n (tokens)"),
        markers=markers,
        y_ticks=byte_ticks(min(values), max(values)),
    )


def _sized(name: str, values: list[int], dash: Dash = "solid") -> Series:
    return Series(name, values, [format_size(v) for v in values], dash)


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


def scores_chart(result: CostResult) -> Chart:
    """Score memory against sequence length: dense, the memory-efficient kernel's row
    statistics, and Q, K, V and the output, with the chosen length and the GPU marked."""
    curves = result.curves
    series = [
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
    title = ngettext(
        "Attention memory of one layer (%(heads)s head × batch %(batch)s)",
        "Attention memory of one layer (%(heads)s heads × batch %(batch)s)",
        result.heads,
    ) % {"heads": format_number(result.heads), "batch": format_number(result.batch)}
    markers = _length_markers(
        result,
        "score_bytes_per_layer",
        "longest_dense_layer_fit",
        gettext("dense scores fill the GPU at n = %(n)s"),
    )
    return _bytes_chart("fig-cost-scores", result, series, title, markers)


def kv_chart(result: CostResult) -> Chart:
    """The KV cache against sequence length for the configurations compared."""
    curves = result.curves
    series = [
        _sized(kv_label(s, result), s.bytes, "solid" if s.id == curves.kv_chosen else "dash")
        for s in curves.kv_cache_bytes
    ]
    title = ngettext(
        "KV cache, %(layers)s layer × batch %(batch)s",
        "KV cache, %(layers)s layers × batch %(batch)s",
        result.layers,
    ) % {"layers": format_number(result.layers), "batch": format_number(result.batch)}
    markers = _length_markers(
        result,
        "kv_cache_bytes",
        "longest_kv_fit",
        gettext("the KV cache fills the GPU at n = %(n)s"),
    )
    return _bytes_chart("fig-cost-kv", result, series, title, markers)


def measure_chart(measurement: Measurement) -> Chart:
    """Measured milliseconds per length against the fitted c·n²."""
    rows = measurement.rows
    ms = [r.seconds * 1000 for r in rows]
    fitted = [r.fitted_seconds * 1000 for r in rows]
    return log_log_lines(
        "fig-measure",
        [r.n for r in rows],
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
        title=gettext("Dense attention, one head: time against length"),
        y_title=gettext("milliseconds"),
        x_title=gettext("sequence length n (tokens)"),
        mode="lines+markers",
    )


# ---------------------------------------------------------------- the form


# The form's element types are those the cost formulas know (DTYPE_BITS); these are their names.
DTYPE_LABELS = {
    "fp32": N_("fp32, 4 bytes"),
    "fp16": N_("fp16, 2 bytes"),
    "bf16": N_("bf16, 2 bytes"),
    "fp8": N_("fp8, 1 byte"),
    "int4": N_("int4, half a byte"),
}
KV_DTYPES = ("fp32", "fp16", "bf16", "fp8", "int4", "q8_0", "q4_0")
# The form's fields, in its order: the canonical state lists them so.
FORM_FIELDS = (
    "seq_len",
    "batch",
    "dtype",
    "gpu_memory_gib",
    "weight_bytes",
    "kv_dtype",
    "kv_lora_rank",
    "rope_head_dim",
    "sinks",
    "layers",
    "heads",
    "kv_heads",
    "head_dim",
    "window",
    "window_layers",
)
# The fields a preset fills: changing one means the numbers are no longer that model's (the
# workload, element types and GPU fields may change under any preset).
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


def used_values(result: CostResult) -> dict[str, int | float | str | None]:
    """Each form field as the result used it (None: not used)."""
    values = {name: getattr(result, name, None) for name in FORM_FIELDS}
    return values | {
        "dtype": result.dtype,  # None: bytes_per_element, a size no type name has
        "gpu_memory_gib": result.gpu.memory_gib,
        "kv_dtype": result.kv_dtype_requested,
        "weight_bytes": result.weight_bytes or None,
        "sinks": result.sinks or None,
    }


def field_text(value: int | float | str | None) -> str:
    """A value as a form field holds it: "" for none, 24 rather than 24.0."""
    if value is None:
        return ""
    return f"{value:g}" if isinstance(value, float) else str(value)


def still_the_preset(form: CostForm) -> CostForm:
    """The form with its preset kept while every preset field it gives still holds that
    model's value. Once one differs the preset goes and its values are written out in its
    place, so every number stays as it was; only the claim that they are that model's goes."""
    if form.preset not in PRESETS_BY_ID:
        return form
    own = used_values(compute_cost(CostQuery(preset=form.preset)))
    given = {name for name in PRESET_FIELDS if name in form.model_fields_set}
    if all(getattr(form, name) == own[name] for name in given):
        return form
    filled = {name: own[name] for name in PRESET_FIELDS if name not in given}
    return form.model_copy(update={**filled, "preset": None})


def computed(form: CostForm) -> tuple[CostResult, list[Problem]]:
    """The result of the form's query; when the service cannot use it, the sentence saying
    why, and the result without the field named (or, failing that, the seed's table)."""
    try:
        return compute_cost(form.request()), []
    except InputError as error:
        field = str(error.loc[-1])
        problem = Problem(field, error.msg)
    instead = form.without(field) if field in CostForm.model_fields else CostForm()
    try:
        return compute_cost(instead.request()), [problem]
    except InputError:  # another field is wrong too: the seed's table
        return compute_cost(CostQuery()), [problem]


# ---------------------------------------------------------------- the view


@dataclass(frozen=True)
class FitView:
    """The "what fits" verdict: cache + weights against the GPU, the longest n and the
    largest batch, each with the numbers of its formula (the values come from the service)."""

    fits: bool
    total: str
    weights: str
    max_seq_len: int
    max_batch: int
    unbounded: bool
    batch_numbers: str
    length_numbers: str
    seq_len: str


def fit_view(result: CostResult) -> FitView:
    gpu, batch = result.gpu, result.batch
    one = result.kv_cache_bytes // batch if batch else 0
    return FitView(
        fits=result.fits,
        total=format_size(result.sizes.kv_and_weights.bytes),
        weights=format_size(result.sizes.weight_bytes.bytes),
        max_seq_len=result.max_seq_len,
        max_batch=result.max_batch,
        unbounded=result.max_seq_len >= MAX_SEQ_LEN,
        batch_numbers=f"⌊({format_number(gpu.memory_bytes)} − "
        f"{format_number(result.weight_bytes)}) / {format_number(one)}⌋",
        length_numbers=f"KV({format_number(result.max_seq_len)}) × {batch} + "
        f"{format_number(result.weight_bytes)} ≤ {format_number(gpu.memory_bytes)}",
        seq_len=format_number(result.seq_len),
    )


def kv_element_text(result: CostResult) -> str:
    """b_kv as the reader can check it: 34/32 for q8_0 (bytes per block / values), else b."""
    if result.kv_dtype in QUANT_BLOCKS:
        size, count = QUANT_BLOCKS[result.kv_dtype]
        return f"{size}/{count}"
    return format_number(result.kv_bytes_per_element)


@dataclass(frozen=True)
class MeasuredRow:
    n: int
    runs: int
    milliseconds: float
    fitted_milliseconds: float
    ratio: float


@dataclass(frozen=True, kw_only=True)
class MeasureView:
    """A timing run as the page shows it: milliseconds, and c per million n²."""

    measurement: Measurement
    rows: list[MeasuredRow]
    c_ms_per_million: float  # c in ms for n² = 10⁶
    chart: Chart


def measure_view(measurement: Measurement) -> MeasureView:
    return MeasureView(
        measurement=measurement,
        rows=[
            MeasuredRow(r.n, r.runs, r.seconds * 1000, r.fitted_seconds * 1000, r.ratio)
            for r in measurement.rows
        ],
        c_ms_per_million=measurement.c_seconds * 1e9,
        chart=measure_chart(measurement),
    )


@dataclass(frozen=True, kw_only=True)
class CostView:
    """Everything /cost shows for one state."""

    result: CostResult
    fields: dict[str, str]  # each field's value as the form shows it
    preset: str  # the preset the numbers are still that of, or ""
    presets: list[PresetInfo]
    dtypes: list[tuple[str, str]]
    kv_dtypes: tuple[str, ...]
    max_seq_len: int
    scores_chart: Chart
    kv_chart: Chart
    kv_element: str
    bytes_count: float  # b for a plural: the bytes per element, 0 when not whole
    kv_share_percent: float
    score_share_percent: float
    fit: FitView
    query: str  # the state as a query string: the JSON twin's and the measure link's
    measure: MeasureView | None
    measure_busy: str | None


def cost_page(
    form: CostForm,
    problems: list[Problem],
    notes: list[str],
    measured: tuple[Measurement | None, str | None],
) -> Page:
    """Everything /cost shows, computed once; what cannot be used is said, and the numbers
    shown are those of what could be (the field named left at its default)."""
    form = still_the_preset(form)
    result, more = computed(form)
    values = used_values(result)
    # The fields keep what was typed, so that a sentence and its field agree; a field left
    # empty shows what was used (the preset's or the default).
    given = form.model_fields_set - {"measure"}
    fields = {
        name: field_text(getattr(form, name) if name in given else values[name])
        for name in FORM_FIELDS
    }
    preset = result.preset.id if result.preset else ""
    state = [("preset", preset)] if preset else []
    state += [(name, field_text(values[name])) for name in FORM_FIELDS if values[name] is not None]
    if result.dtype is None:
        state.append(("bytes_per_element", field_text(result.bytes_per_element)))
    b = result.bytes_per_element
    measurement, busy = measured
    view = CostView(
        result=result,
        fields=fields,
        preset=preset,
        presets=preset_list(),
        dtypes=[(name, gettext(DTYPE_LABELS[name])) for name in DTYPE_BITS],
        kv_dtypes=KV_DTYPES,
        max_seq_len=MAX_SEQ_LEN,
        scores_chart=scores_chart(result),
        kv_chart=kv_chart(result),
        kv_element=kv_element_text(result),
        bytes_count=b if float(b).is_integer() else 0,
        kv_share_percent=result.gpu.kv_cache_share * 100,
        score_share_percent=result.gpu.score_layer_share * 100,
        fit=fit_view(result),
        query=state_query(state),
        measure=measure_view(measurement) if measurement else None,
        measure_busy=busy,
    )
    return Page(
        template="cost/cost.html",
        fragment="cost/_live.html",
        view=view,
        problems=[*problems, *more],
        notes=notes,
        state=state,
    )


async def cost_measurement(
    form: CostForm, measurements: MeasurementCache
) -> tuple[Measurement | None, str | None]:
    """The measurement /cost shows, and why it is missing if it is: `measure=1` runs or
    awaits the timing; without it the page shows a finished run if there is one."""
    if form.measure is None:
        return measurements.result, None
    try:
        return await measurements.get(), None
    except BusyError as exc:
        return None, exc.msg
