"""Position embeddings (tier A): ApplyRotaryPosEmb, the rotary embedding of a decoder's queries
and keys in one op, as CANN's aclnnApplyRotaryPosEmb fuses the two (rotate_half, the
GPT-NeoX / Llama style; layout BSND: tokens first, then heads, then the head dim).

For each token, every head row x of query and key, split into halves x1 and x2, becomes
x * cos + rotate_half(x) * sin with rotate_half(x) = (-x2, x1): the token's cos and sin rows
are shared by its heads.
"""

from __future__ import annotations

import numpy as np

from ..database import register
from ..dtypes import FLOATS
from ..errors import ShapeMismatch
from ..schema import ArgSpec, OpSchema, SampleCase


def _infer_rotary(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    query, key, cos, sin = specs
    if len(query.shape) < 2 or query.shape[-1] % 2:
        raise ShapeMismatch(f"ApplyRotaryPosEmb: query must be (..., heads, head_dim) with an "
                            f"even head_dim, got shape {query.shape}")
    tokens, dim = query.shape[:-2], query.shape[-1]
    if key.shape[:-2] != tokens or len(key.shape) != len(query.shape) or key.shape[-1] != dim:
        raise ShapeMismatch(f"ApplyRotaryPosEmb: key {key.shape} must have query's tokens "
                            f"{tokens} and head_dim {dim}: (*tokens, key heads, {dim})")
    table = tokens + (1, dim)
    for name, spec in (("cos", cos), ("sin", sin)):
        if spec.shape != table:
            raise ShapeMismatch(f"ApplyRotaryPosEmb: {name} of shape {spec.shape} must be "
                                f"{table}: one row of head_dim per token, shared by its heads")
    return [ArgSpec(query.shape, query.dtype), ArgSpec(key.shape, key.dtype)]


def rotate_half(x: np.ndarray) -> np.ndarray:
    """(-x2, x1) of x's halves along the last axis."""
    x1, x2 = np.split(x, 2, axis=-1)
    return np.concatenate([-x2, x1], axis=-1)


def _apply_rotary(query, key, cos, sin):
    return query * cos + rotate_half(query) * sin, key * cos + rotate_half(key) * sin


def _case(note: str, tokens: tuple, q_heads: int, k_heads: int, dim: int) -> SampleCase:
    return SampleCase(note, (tokens + (q_heads, dim), tokens + (k_heads, dim),
                             tokens + (1, dim), tokens + (1, dim)))


register(OpSchema(
    name="ApplyRotaryPosEmb", tier="A", family="position", inputs=("query", "key", "cos", "sin"),
    outputs=("query_out", "key_out"), dtypes=FLOATS, reference_fn=_apply_rotary,
    infer_fn=_infer_rotary,
    doc="query_out = query * cos + rotate_half(query) * sin, key_out likewise, with "
        "rotate_half(x) = (-x2, x1) of x's halves along the head dim; cos and sin "
        "(*tokens, 1, head_dim) are shared by a token's heads (query (*tokens, heads, "
        "head_dim), key (*tokens, key heads, head_dim))",
    samples=[_case("one token, head_dim 2", (1,), 1, 1, 2),
             _case("decode: one token, grouped keys (SmolLM2: 9 query heads, 3 key heads)",
                   (1,), 9, 3, 64),
             _case("half a row not a whole block (head_dim 6)", (3,), 2, 1, 6),
             _case("halves of 7 elements: bytes not a multiple of 32", (4,), 3, 2, 14),
             _case("a half longer than one repeat (head_dim 256)", (2,), 2, 2, 256),
             _case("batch and sequence (BSND)", (2, 5), 4, 2, 32),
             _case("no tokens", (0,), 2, 1, 8),
             _case("no key heads", (3,), 2, 0, 8),
             _case("prefill: many tokens over the cores", (300,), 9, 3, 64)]))
