"""From a HeadsRequest to the /api/heads result: every head's stages, the concatenation, W_O."""

import numpy as np

from app.core.budget import check_answer
from app.core.errors import InputError
from app.core.rules import kv_heads_problem
from app.features.heads.schemas import HeadsRequest, HeadsResult, KvCachePerToken, QueryHead
from app.features.stages.results import StageFields
from app.features.stages.schemas import check_limits, check_mask
from app.features.stages.service import check_rope, mask_of, resolve_sequence
from app.math import attention as att
from app.math import heads as mh
from app.math.cost import kv_cache_bytes_per_token
from app.settings import Settings

DEFAULT_D_HEAD = 2
# The request fields that can fix each width, the first given one fixing it.
WIDTH_SOURCES = {
    "d_model": ("x", "d_model", "w_q", "w_k", "w_v", "w_o"),
    "d_head": ("d_head", "w_q", "w_k", "w_v"),
}


KV_BYTES_PER_ELEMENT = 2  # fp16 / bf16, as the cost calculator defaults


def _projections(
    given: list[list[list[float]]] | None,
    name: str,
    count: tuple[str, int],
    d_model: int,
    d_head: int,
    seed: int,
) -> np.ndarray:
    """One d_model × d_head matrix per head, given (shapes checked) or seeded."""
    count_name, number = count
    if given is None:
        return np.stack(
            [att.random_projection(d_model, d_head, seed, f"{name}[{i}]") for i in range(number)]
        )  # (count, d_model, d_head)
    if len(given) != number:
        matrices = "matrix" if len(given) == 1 else "matrices"
        role = "query" if name == "w_q" else "key/value"
        raise InputError(
            (name,),
            f"{name} has {len(given)} {matrices} but {count_name} is {number}; give one "
            f"d_model × d_head matrix per {role} head",
        )
    for i, matrix in enumerate(given):
        if len(matrix) != d_model:
            raise InputError(
                (name, i),
                f"{name}[{i}] has {len(matrix)} rows but each x row has {d_model} numbers "
                f"(d_model = {d_model}); every {name} matrix needs one row per input number",
            )
        if len(matrix[0]) != d_head:
            raise InputError(
                (name, i),
                f"{name}[{i}] has {len(matrix[0])} columns but d_head is {d_head}; every "
                "head's q, k and v have d_head numbers",
            )
    return np.array(given, dtype=float)


def _output_projection(req: HeadsRequest, rows: int, d_model: int) -> np.ndarray:
    if req.w_o is None:
        return att.random_projection(rows, d_model, req.seed, "w_o")
    if len(req.w_o) != rows or len(req.w_o[0]) != d_model:
        raise InputError(
            ("w_o",),
            f"w_o is {len(req.w_o)} × {len(req.w_o[0])} but must be (heads · d_head) × d_model "
            f"= {rows} × {d_model}: one row per number of the concatenation, one column "
            "per number of the model's width",
        )
    return np.array(req.w_o, dtype=float)


def compute_heads(req: HeadsRequest, settings: Settings) -> HeadsResult:
    """The whole /api/heads result: every head's stages, the concatenation, W_O, output."""
    tokens, x, _ = resolve_sequence(req)
    n, d_model = x.shape
    h = req.heads
    g = req.kv_heads or h
    given = next((w[0] for w in (req.w_q, req.w_k, req.w_v) if w is not None), None)
    d_head = req.d_head or (len(given[0]) if given is not None else DEFAULT_D_HEAD)
    problem = kv_heads_problem(h, g)
    if problem:
        raise InputError(("kv_heads",), problem)
    if h > settings.max_heads:
        raise InputError(
            ("heads",), f"heads is {h} but this server allows at most {settings.max_heads}"
        )
    check_limits(
        n,
        {"d_model": d_model, "d_head": d_head},
        settings.max_tokens,
        settings.max_width,
        field_of=lambda label: req.first_given(WIDTH_SOURCES[label], label),
    )
    check_mask(req.mask, n)
    check_rope(req.positional, "d_head", d_head)
    size = HeadsResult.answer_bytes(n, h, g, d_model, d_head)
    check_answer(size, settings.answer_budget_bytes, ("tokens", "heads", "d_head", "d_model"))
    w_q = _projections(req.w_q, "w_q", ("heads", h), d_model, d_head, req.seed)
    w_k = _projections(req.w_k, "w_k", ("kv_heads", g), d_model, d_head, req.seed)
    w_v = _projections(req.w_v, "w_v", ("kv_heads", g), d_model, d_head, req.seed)
    w_o = _output_projection(req, h * d_head, d_model)

    allowed = mask_of(req.mask, n)
    stages = mh.multi_head_attention(x, w_q, w_k, w_v, allowed, req.scale, req.positional, w_o)
    return HeadsResult(
        tokens=tokens,
        d_model=d_model,
        d_head=d_head,
        kv_heads=g,
        scale_factor=stages.heads[0].scale_factor,
        positional=req.positional,
        x=x,
        x_positioned=stages.x_in,
        w_q=w_q,
        w_k=w_k,
        w_v=w_v,
        w_o=w_o,
        mask=req.mask.model_dump(exclude_none=True),
        heads=[
            QueryHead(**StageFields.of(s).fields(), kv_head=kv)
            for s, kv in zip(stages.heads, stages.kv_head, strict=True)
        ],
        concat=stages.concat,
        output=stages.output,
        kv_cache_bytes_per_token=KvCachePerToken(
            bytes_per_element=KV_BYTES_PER_ELEMENT,
            this=kv_cache_bytes_per_token(1, g, d_head, KV_BYTES_PER_ELEMENT),
            multi_head=kv_cache_bytes_per_token(1, h, d_head, KV_BYTES_PER_ELEMENT),
        ),
    )
