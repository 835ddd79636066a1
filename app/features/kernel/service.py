"""Tiled exact attention and cached decoding of a lab state, with their counts."""

from math import ceil

import numpy as np

from app.core.budget import check_answer
from app.core.errors import InputError
from app.core.i18n import format_number, gettext
from app.features.kernel.results import (
    CacheUsed,
    DecodeResult,
    DecodeStep,
    LongSequenceRow,
    LongSequenceUsed,
    LongTraffic,
    Prefill,
    TiledMemory,
    TiledResult,
    TiledTraffic,
    TileStep,
    TrafficCount,
    TrafficCurve,
)
from app.features.kernel.schemas import DecodeRequest, KernelRequest, TiledRequest
from app.features.lab.service import inputs_used, one_head, resolve_inputs
from app.features.stages.service import mask_of
from app.math import decoding as dc
from app.math import flash as fl
from app.math import kernel as kn
from app.math.cost import score_bytes, storage_bytes
from app.settings import Settings


def default_block(n: int) -> int:
    """Two blocks each way: four steps, small enough to follow, large enough to tile."""
    return max(1, ceil(n / 2))


def check_tiling(n: int, block_q: int, block_k: int, settings: Settings) -> None:
    """A walk-through returns every step with an n × n map: keep it within the settings."""
    steps = ceil(n / block_q) * ceil(n / block_k)
    numbers = {"bq": block_q, "bk": block_k, "n": n, "steps": format_number(steps)}
    if steps > settings.max_kernel_steps:
        raise InputError(
            ("block_q",),
            gettext(
                "block_q = %(bq)s and block_k = %(bk)s cut %(n)s tokens into %(steps)s steps "
                "but this server walks through at most %(max)s; make the blocks larger"
            )
            % {**numbers, "max": format_number(settings.max_kernel_steps)},
        )
    cells = steps * n * n
    if cells > settings.max_kernel_cells:
        raise InputError(
            ("block_q",),
            gettext(
                "block_q = %(bq)s and block_k = %(bk)s give %(steps)s steps, each with a "
                "%(n)s × %(n)s map of the scores touched so far: %(cells)s cells, but this "
                "server returns at most %(max)s; make the blocks larger or use fewer tokens"
            )
            % {
                **numbers,
                "cells": format_number(cells),
                "max": format_number(settings.max_kernel_cells),
            },
        )


def long_sequence_fields(req: KernelRequest) -> dict[str, object]:
    """Tiled and cached-decoding counts for long sequences, in closed form, by the field
    names KernelResult shares."""
    spec = req.long_sequence
    rows = []
    for n in spec.seq_lens:
        tiled = kn.tiled_counts(n, spec.block, spec.block, spec.head_dim, spec.head_dim)
        rows.append(
            LongSequenceRow.of(
                tiled,
                score_bytes(n),  # 2 bytes per score, as in the cost table of seed 000
                storage_bytes(tiled.tiled_score_entries),
                kn.decode_counts(n, spec.head_dim, spec.head_dim),
                long_traffic(n, spec.head_dim, spec.sram_elements),
            )
        )
    return {
        "long_sequence": LongSequenceUsed(**spec.model_dump()),
        "long_sequences": rows,
        "traffic_curve": traffic_curve(spec.head_dim, spec.sram_elements),
    }


CURVE_LENGTHS = [2**e for e in range(8, 18)]  # 256 … 131,072 tokens


def traffic_curve(d: int, sram: int) -> TrafficCurve:
    """Total elements moved (reads + writes) against n for one head of width d: standard
    attention and both orders, full and causal, blocks from the on-chip memory M."""
    b_r, b_c = fl.sram_blocks(sram, d)

    def totals(order: fl.LoopOrder, causal: bool) -> list[int]:
        return [fl.counted_traffic(n, b_r, b_c, d, d, order, causal).total for n in CURVE_LENGTHS]

    return TrafficCurve(
        seq_len=CURVE_LENGTHS,
        standard=[fl.standard_traffic(n, d, d).total for n in CURVE_LENGTHS],
        fa1=totals("fa1", False),
        fa2=totals("fa2", False),
        fa1_causal=totals("fa1", True),
        fa2_causal=totals("fa2", True),
    )


def long_traffic(n: int, d: int, sram: int) -> LongTraffic:
    """Both orders' traffic for one head of width d at length n, full and causal, against
    standard attention; blocks from the on-chip memory M."""
    b_r, b_c = fl.sram_blocks(sram, d)

    def counted(order: fl.LoopOrder, causal: bool) -> fl.Traffic:
        return fl.counted_traffic(n, b_r, b_c, d, d, order, causal)

    std = fl.standard_traffic(n, d, d)
    return LongTraffic(
        sram_elements=sram,
        block_q=b_r,
        block_k=b_c,
        standard=TrafficCount(reads=std.reads, writes=std.writes),
        fa1=counted("fa1", False),
        fa2=counted("fa2", False),
        fa1_causal=counted("fa1", True),
        fa2_causal=counted("fa2", True),
    )


def tile_blocks(req: TiledRequest, n: int, d_k: int) -> tuple[int, int, bool]:
    """(b_q, b_k, from sram): the request's sizes, else the paper's from M, else two blocks."""
    if req.sram_elements is not None:
        b_r, b_c = fl.sram_blocks(req.sram_elements, d_k)
        return req.block_q or b_r, req.block_k or b_c, True
    return req.block_q or default_block(n), req.block_k or default_block(n), False


def compute_tiled(req: TiledRequest, settings: Settings) -> TiledResult:
    """Tiled exact attention on a lab state, every step, next to the dense result."""
    inputs = resolve_inputs(req, settings)
    n = inputs.n
    block_q, block_k, from_sram = tile_blocks(req, n, inputs.w_q.shape[1])
    check_tiling(n, block_q, block_k, settings)
    rows = len(req.long_sequence.seq_lens)
    size = TiledResult.answer_bytes(n, inputs.widths, (block_q, block_k), rows)
    check_answer(size, settings.answer_budget_bytes, ("tokens", "block_q", "block_k"))
    allowed = mask_of(inputs.mask, n)
    run = one_head(inputs, allowed)
    dense = run.head
    q, k, v = dense.q, dense.k, dense.v  # position applied, as in /api/attention
    mask = kn.mask_from_matrix(allowed)
    flash = fl.flash_attention(q, k, v, mask, block_q, block_k, req.order, inputs.scale)
    steps, output = flash.steps, flash.output
    maps = kn.touched_maps(steps, n)
    d_k, d_v = q.shape[1], v.shape[1]
    standard = fl.standard_traffic(n, d_k, d_v)
    return TiledResult(
        **inputs_used(inputs, run),
        scale=inputs.scale,
        q=q,
        k=k,
        v=v,
        allowed=allowed,
        empty_rows=dense.empty_rows,
        **long_sequence_fields(req),
        order=req.order,
        sram_elements=req.sram_elements,
        block_q=block_q,
        block_k=block_k,
        blocks_from_sram=from_sram,
        steps=[TileStep.of(s, m) for s, m in zip(steps, maps, strict=True)],
        logsumexp=flash.logsumexp,
        traffic=TiledTraffic(
            order=req.order,
            tiled=TrafficCount(reads=flash.traffic.reads, writes=flash.traffic.writes),
            standard=TrafficCount(reads=standard.reads, writes=standard.writes),
            setup_writes=sum(t.elements for t in flash.setup),
            tiles=flash.traffic.tiles,
            skipped_tiles=flash.traffic.skipped_tiles,
        ),
        output=output,
        dense_output=dense.output,
        max_abs_difference=float(np.abs(output - dense.output).max()),
        memory=TiledMemory(
            dense_score_entries=n * n,
            peak_score_entries=max(s.score_entries for s in steps),
            dense_dot_products=n * n,
            tiled_dot_products=sum(s.score_entries for s in steps),
            skipped_steps=sum(s.skipped for s in steps),
            full_attention=kn.tiled_counts(n, block_q, block_k, d_k, d_v),
        ),
    )


def compute_decode(req: DecodeRequest, settings: Settings) -> DecodeResult:
    """A prefill of the first tokens, then one token at a time against a growing cache."""
    inputs = resolve_inputs(req, settings)
    n = inputs.n
    prompt = req.prompt or max(1, n // 2)
    if prompt > n:
        raise InputError(
            ("prompt",),
            gettext(
                "prompt is %(prompt)s but there are only %(n)s tokens; the prefill takes 1 to "
                "%(n)s of them"
            )
            % {"prompt": prompt, "n": n},
        )
    rows = len(req.long_sequence.seq_lens)
    size = DecodeResult.answer_bytes(n, inputs.widths, prompt, rows)
    check_answer(size, settings.answer_budget_bytes, ("tokens", "d_k", "d_v"))
    allowed = mask_of(inputs.mask.model_copy(update={"causal": True}), n)
    policy = req.cache.policy_used()
    decoding = dc.decode(
        inputs.x,
        inputs.w_q,
        inputs.w_k,
        inputs.w_v,
        allowed,
        prompt,
        inputs.scale,
        inputs.positional,
        policy,
    )
    run = one_head(inputs, allowed)
    full = run.head
    matching = one_head(inputs, allowed & policy.mask(n)).head
    prefill = decoding.prefill
    dots_cached = dots_uncached = prompt * prompt
    steps = []
    for step in decoding.steps:
        t, row = step.position, step.stages
        dots_cached += step.dots_cached
        dots_uncached += step.dots_uncached
        steps.append(
            DecodeStep(
                position=t,
                token=inputs.tokens[t],
                cached_positions=step.cached_positions,
                cached_tokens=[inputs.tokens[j] for j in step.cached_positions],
                evicted=step.evicted,
                cache_elements=step.cache_elements,
                q=step.q,
                k=step.k,
                v=step.v,
                cache_length=step.cache_length,
                scores=row.scores[0],
                scaled=row.scaled[0],
                allowed=row.allowed[0],
                weights=row.weights[0],
                output=row.output[0],
                full_output=full.output[t],
                max_abs_difference=float(np.abs(row.output[0] - full.output[t]).max()),
                dots_cached=step.dots_cached,
                dots_uncached=step.dots_uncached,
                dots_cached_total=dots_cached,
                dots_uncached_total=dots_uncached,
                cache_entries=step.cache_elements,
            )
        )
    output = decoding.output
    return DecodeResult(
        **inputs_used(inputs, run),
        scale=inputs.scale,
        q=full.q,
        k=full.k,
        v=full.v,
        allowed=allowed,
        empty_rows=full.empty_rows,
        **long_sequence_fields(req),
        forced_causal=not inputs.mask.causal,
        prompt=prompt,
        cache=CacheUsed(
            policy=policy.policy,
            window=policy.window,
            sinks=policy.sinks,
            capacity=policy.capacity,
        ),
        policy_mask_difference=float(np.abs(decoding.output - matching.output).max()),
        prefill=Prefill(
            tokens=inputs.tokens[:prompt],
            scores=prefill.scores,
            scaled=prefill.scaled,
            allowed=prefill.allowed,
            weights=prefill.weights,
            output=prefill.output,
            dots=prompt * prompt,
            cache_length=len(decoding.prefill_positions),
            cached_positions=decoding.prefill_positions,
        ),
        steps=steps,
        output=output,
        full_output=full.output,
        max_abs_difference=float(np.abs(output - full.output).max()),
    )
