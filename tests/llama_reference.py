"""A deliberately plain second Llama forward pass, for the cache tests to compare.

Nothing from app/: float64 throughout, one head at a time in a loop, RoPE as a complex
multiplication (as in Meta's reference code: the pair (2i, 2i+1) is the complex number
m_2i + i·m_2i+1, turned by e^(i·p·θ_i)), and the mask given as an explicit matrix. It reads the
weight arrays by their names in LlamaWeights, nothing more.
"""

from typing import Any

import numpy as np


def final_hidden(w: Any, ids: list[int], allowed: np.ndarray) -> np.ndarray:
    """The final-normed hidden states (n, d_model) of every position, query i seeing key j
    exactly where allowed[i, j]."""
    c = w.config
    n, d = len(ids), c.d_head
    theta = c.rope_base ** (-np.arange(0, d, 2) / d)
    turn = np.exp(1j * np.arange(n)[:, None] * theta[None, :])  # (n, d/2)

    def rotate(m: np.ndarray) -> np.ndarray:
        z = (m[:, 0::2] + 1j * m[:, 1::2]) * turn
        out = np.empty_like(m)
        out[:, 0::2], out[:, 1::2] = z.real, z.imag
        return out

    def norm(v: np.ndarray, gain: np.ndarray) -> np.ndarray:
        return v / np.sqrt((v**2).mean(axis=1, keepdims=True) + c.eps) * gain

    x = w.embedding[ids].astype(np.float64)
    for layer in range(c.layers):
        h = norm(x, w.attn_norm[layer])
        q, k, v = h @ w.w_q[layer], h @ w.w_k[layer], h @ w.w_v[layer]
        outputs = []
        for head in range(c.heads):
            g = head // (c.heads // c.kv_heads)
            q_i = rotate(q[:, head * d : (head + 1) * d])
            k_g, v_g = rotate(k[:, g * d : (g + 1) * d]), v[:, g * d : (g + 1) * d]
            scores = q_i @ k_g.T / np.sqrt(d)
            scores[~allowed] = -np.inf
            p = np.exp(scores - scores.max(axis=1, keepdims=True))
            outputs.append((p / p.sum(axis=1, keepdims=True)) @ v_g)
        x = x + np.hstack(outputs) @ w.w_o[layer]
        h = norm(x, w.mlp_norm[layer])
        gate = h @ w.w_gate[layer]
        x = x + (gate / (1 + np.exp(-gate)) * (h @ w.w_up[layer])) @ w.w_down[layer]
    return norm(x, w.final_norm)
