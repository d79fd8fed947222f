# Your implementation. Replace every `raise NotImplementedError`, then run `pytest` in this folder.
"""Scaled dot-product attention, one step at a time.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Shapes use these letters throughout:

    ...   any number of leading batch / head dimensions (B, or B and H)
    T_q   number of queries          T_k   number of keys (= number of values)
    d_k   size of a query or key     d_v   size of a value

Build the functions in the order they appear; each later one uses the earlier ones.
Every function keeps the dtype and device of its inputs and must not modify them.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def attention_scores(Q: Tensor, K: Tensor) -> Tensor:
    """Raw attention scores: every query dotted with every key.

    Args:
        Q: queries, shape (..., T_q, d_k).
        K: keys, shape (..., T_k, d_k).

    Returns:
        scores of shape (..., T_q, T_k) where scores[..., i, j] = Q[..., i, :] . K[..., j, :]
    """
    # TODO: transpose only the last two axes of K, then use a batched matrix product
    raise NotImplementedError('attention_scores is not implemented yet')


def scale_scores(scores: Tensor, d_k: int) -> Tensor:
    """Divide the scores by sqrt(d_k), so their variance is about 1 whatever d_k is.

    Args:
        scores: raw scores, any shape.
        d_k: the size of the query and key vectors.

    Returns:
        scores / sqrt(d_k), same shape and dtype as scores.
    """
    # TODO: divide by the square root of d_k, not by d_k itself
    raise NotImplementedError('scale_scores is not implemented yet')


def causal_mask(T_q: int, T_k: int | None = None, *, device: torch.device | str | None = None) -> Tensor:
    """Causal mask: query i may attend to key j only when j <= i.

    The mask is aligned at the top left, exactly like is_causal=True in
    torch.nn.functional.scaled_dot_product_attention, also when T_q != T_k.

    Args:
        T_q: number of queries (rows).
        T_k: number of keys (columns); defaults to T_q.
        device: where to create the mask.

    Returns:
        bool tensor of shape (T_q, T_k); True where the query may attend to the key.
    """
    if T_k is None:
        T_k = T_q
    # TODO: a lower-triangular matrix of True values (torch.tril) of shape (T_q, T_k)
    raise NotImplementedError('causal_mask is not implemented yet')


def padding_mask(valid_lens: Tensor, T_k: int) -> Tensor:
    """Turn sequence lengths into a key mask, as in d2l's masked_softmax.

    Args:
        valid_lens: integer lengths, shape (B,) (one length per sequence) or
            (B, T_q) (one length per query).
        T_k: number of keys.

    Returns:
        bool mask, shape (B, 1, T_k) for valid_lens of shape (B,), or (B, T_q, T_k)
        for valid_lens of shape (B, T_q). True for the first valid_lens keys, which
        may be attended to; False for the padding after them.
    """
    # TODO: compare torch.arange(T_k) with valid_lens given a trailing axis of size 1
    raise NotImplementedError('padding_mask is not implemented yet')


def masked_softmax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """Softmax over the last (key) axis, ignoring the keys the mask forbids.

    Args:
        scores: scaled scores, shape (..., T_q, T_k).
        mask: optional bool tensor broadcastable to scores; True = may attend.

    Returns:
        weights, same shape as scores (after broadcasting with mask): every row is
        non-negative and sums to 1 over its allowed keys; masked entries are exactly 0;
        a row with no allowed key is all zeros. Never NaN, in the result or in its
        gradient, even for scores as large as 1e4.
    """
    if mask is not None and mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor (True = may attend), got dtype {mask.dtype}")
    # TODO: fill masked scores with -inf, subtract the row max, exponentiate, and never divide by 0
    raise NotImplementedError('masked_softmax is not implemented yet')


def attention_output(weights: Tensor, V: Tensor) -> Tensor:
    """Weighted sum of the values: each output row mixes the value rows by its weights.

    Args:
        weights: attention weights, shape (..., T_q, T_k).
        V: values, shape (..., T_k, d_v).

    Returns:
        output of shape (..., T_q, d_v).
    """
    # TODO: one batched matrix product
    raise NotImplementedError('attention_output is not implemented yet')


def scaled_dot_product_attention(
    Q: Tensor,
    K: Tensor,
    V: Tensor,
    mask: Tensor | None = None,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor]:
    """softmax(Q K^T / sqrt(d_k)) V, built from the functions above.

    Do not call torch.nn.functional.scaled_dot_product_attention or any other fused
    attention here: the point is to write it yourself.

    Args:
        Q: queries, shape (..., T_q, d_k).
        K: keys, shape (..., T_k, d_k).
        V: values, shape (..., T_k, d_v).
        mask: optional bool mask broadcastable to (..., T_q, T_k); True = may attend.
        is_causal: if True, also apply causal_mask(T_q, T_k); with a mask as well,
            a key is allowed only where both allow it.

    Returns:
        (output, weights): output of shape (..., T_q, d_v) and the attention
        weights of shape (..., T_q, T_k).
    """
    # TODO: scores, then scale, then (combine the masks and) masked softmax, then the output
    raise NotImplementedError('scaled_dot_product_attention is not implemented yet')


class MultiHeadAttention(nn.Module):
    """Multi-head attention: num_heads attentions side by side, each on d_model / num_heads features.

    Attributes:
        w_q, w_k, w_v: nn.Linear(d_model, d_model, bias) projections of query, key and value.
        w_o: nn.Linear(d_model, d_model, bias) applied to the concatenated heads.
    """

    def __init__(self, d_model: int, num_heads: int, bias: bool = True) -> None:
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        # TODO: four nn.Linear(d_model, d_model, bias=bias) named w_q, w_k, w_v and w_o
        raise NotImplementedError('MultiHeadAttention.__init__ is not implemented yet')

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor]:
        """Project, split into heads, attend, merge the heads, project again.

        Args:
            query: (B, T_q, d_model).
            key, value: (B, T_k, d_model).
            mask: optional bool mask, True = may attend: either 3-D, (B, T_q, T_k) or (B, 1, T_k)
                as padding_mask returns, the same for every head (insert the head axis:
                (B, 1, T_q, T_k)); or 2-D (T_q, T_k) or 4-D, broadcastable to (B, num_heads, T_q, T_k).
            is_causal: apply a causal mask as in scaled_dot_product_attention.

        Returns:
            (output, weights): output of shape (B, T_q, d_model), weights of shape (B, num_heads, T_q, T_k).
        """
        # TODO: view (B, T, d_model) as (B, T, H, d_head), transpose to (B, H, T, d_head), give a 3-D mask its head axis, attend, undo
        raise NotImplementedError('MultiHeadAttention.forward is not implemented yet')


def dot_product_variance(d_k: int, num_samples: int = 10000, generator: torch.Generator | None = None) -> float:
    """Empirical variance of q . k for random q, k ~ N(0, I_{d_k}): the reason for the scale.

    Draw num_samples independent pairs (q, k) with torch.randn(..., generator=generator)
    and return the sample variance of their dot products. It comes out close to d_k.

    Args:
        d_k: size of the vectors.
        num_samples: number of (q, k) pairs.
        generator: random generator to draw from (so the result is reproducible).

    Returns:
        the sample variance, a Python float.
    """
    # TODO: draw two (num_samples, d_k) tensors with torch.randn, take row-wise dot products, then .var()
    raise NotImplementedError('dot_product_variance is not implemented yet')


# Knowledge check: replace each example value below with your answer, written out as in the example
# (a letter in quotes, a number, a tuple, True or False). Graded with your code, 1 point each.

# q_formula. Which is scaled dot-product attention? (a) softmax(Q K^T) V, (b) softmax(Q K^T / sqrt(d_k)) V, (c)
#   softmax(Q K^T / d_k) V, (d) softmax(Q^T K / sqrt(d_k)) V. Answer with a letter.
q_formula = "a"

# q_why_scale. The scale exists mainly to: (a) reduce the vocabulary size, (b) keep the softmax from saturating as
#   d_k grows, (c) remove the need for V. Answer with a letter.
q_why_scale = "a"

# q_variance. For q, k with independent N(0, 1) entries and d_k = 64, what is Var(q . k)? Answer with a number.
q_variance = 0

# q_scores_shape. Q has shape (32, 50, 64) and K has shape (32, 40, 64). What is the shape of Q K^T? Answer with a
#   tuple.
q_scores_shape = (0, 0, 0)

# q_output_shape. With Q (32, 50, 64), K (32, 50, 64) and V (32, 50, 128), what is the output's shape? Answer with a
#   tuple.
q_output_shape = (0, 0, 0)

# q_mask_polarity. True or False: in this assignment's bool masks, True means the query may attend to the key.
q_mask_polarity = None  # <True or False>

# q_causal_keys. With a causal mask and T = 4, which key positions (0-based) may query 2 attend to? Answer with a
#   list.
q_causal_keys = []

# q_fully_masked. Every key of a row is filled with -inf and a plain softmax is applied. The row comes out as: (a)
#   all zeros, (b) uniform, (c) NaN. Answer with a letter.
q_fully_masked = "a"

# q_argmax. True or False: dividing every score of a row by the same positive constant changes the row's argmax.
q_argmax = None  # <True or False>

# q_multi_head. Multi-head attention runs scaled dot-product attention: (a) once, globally, (b) once per head, then
#   concatenates the heads, (c) on the values only. Answer with a letter.
q_multi_head = "a"
