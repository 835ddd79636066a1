"""The services' typed results, read by attribute as the page reads them."""

import dataclasses

import numpy as np
import pytest

from app.features.kernel.results import DecodeResult, TiledResult, TileStep
from app.features.kernel.schemas import DecodeRequest, TiledRequest
from app.features.kernel.service import compute_decode, compute_tiled
from app.settings import Settings

SENTENCE = {"tokens": ["a", "b", "c", "d", "e", "f"], "mask": {"causal": True}, "d_model": 4}


@pytest.mark.parametrize("order", ["fa1", "fa2"])
def test_tiled_traffic_is_the_sum_of_its_steps(order: str) -> None:
    req = TiledRequest.model_validate({**SENTENCE, "order": order, "block_q": 2, "block_k": 2})
    result = compute_tiled(req, Settings())
    assert isinstance(result, TiledResult)
    assert all(isinstance(step, TileStep) for step in result.steps)
    traffic = result.traffic
    assert traffic.tiled.reads == sum(step.elements_read for step in result.steps)
    assert traffic.tiled.writes == traffic.setup_writes + sum(
        step.elements_written for step in result.steps
    )
    assert traffic.tiled.total == traffic.tiled.reads + traffic.tiled.writes
    # 3 × 3 tiles, causal: the 3 above the diagonal are skipped
    assert (traffic.tiles, traffic.skipped_tiles, result.memory.skipped_steps) == (9, 3, 3)
    assert result.memory.tiled_dot_products == sum(s.score_entries for s in result.steps) == 24
    assert result.steps[-1].touched_entries == 24  # every computed score, hidden ones too
    np.testing.assert_allclose(result.output, result.dense_output, rtol=0, atol=1e-12)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.order = "fa1"  # type: ignore[misc]


def test_decode_counts_add_up_step_by_step() -> None:
    req = DecodeRequest.model_validate(
        {**SENTENCE, "prompt": 2, "cache": {"policy": "window", "window": 3}}
    )
    result = compute_decode(req, Settings())
    assert isinstance(result, DecodeResult)
    assert (result.cache.policy, result.cache.capacity) == ("window", 3)
    assert [step.cache_length for step in result.steps] == [3, 3, 3, 3]
    assert result.steps[-1].dots_cached_total == 2 * 2 + 4 * 3
    # the prefill is one 2 × 2 matrix, then each token recomputes its (t + 1)²
    assert result.steps[-1].dots_uncached_total == 2 * 2 + sum(t * t for t in range(3, 7))
    assert list(result.steps[-1].cached_positions) == [3, 4, 5]
    assert result.policy_mask_difference < 1e-12
    assert result.long_sequences[0].decode.n == result.long_sequence.seq_lens[0]
