"""The reference solution agrees with PyTorch's own attention, which is independent of it."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from autograder.config import load_settings
from reference import attention as ref


def randn(*shape, dtype=torch.float64):
    return torch.randn(*shape, dtype=dtype)


def test_lesson_shapes():
    """The lesson's shapes ([lesson] in the settings): (B, T, d_k) x (B, T, d_k) x (B, T, d_v) -> (B, T, d_v) and
    weights (B, T, T)."""
    lesson = load_settings(environ={}).lesson
    B, T, d_k, d_v = lesson.batch, lesson.sequence, lesson.d_k, lesson.d_v
    output, weights = ref.scaled_dot_product_attention(randn(B, T, d_k), randn(B, T, d_k), randn(B, T, d_v))
    assert output.shape == (B, T, d_v)
    assert weights.shape == (B, T, T)


def test_matches_fused_attention_with_masks_and_causal():
    """Output equals F.scaled_dot_product_attention with broadcast masks, and with is_causal for T_q != T_k."""
    Q, K, V = randn(2, 3, 5, 4), randn(2, 3, 7, 4), randn(2, 3, 7, 6)
    for mask in (None, torch.rand(5, 7) > 0.4, torch.rand(2, 1, 1, 7) > 0.4, torch.rand(2, 3, 5, 7) > 0.4):
        output, _ = ref.scaled_dot_product_attention(Q, K, V, mask)
        torch.testing.assert_close(output, F.scaled_dot_product_attention(Q, K, V, attn_mask=mask))
    for T_q, T_k in ((5, 7), (7, 5)):
        Q, K, V = randn(2, T_q, 4), randn(2, T_k, 4), randn(2, T_k, 6)
        output, _ = ref.scaled_dot_product_attention(Q, K, V, is_causal=True)
        torch.testing.assert_close(output, F.scaled_dot_product_attention(Q, K, V, is_causal=True))


def test_fully_masked_rows_are_zero_with_finite_gradients():
    """A row with no allowed key gives zero weights and output, like PyTorch's attention, and finite gradients."""
    Q, K, V = (randn(1, 3, 4).requires_grad_() for _ in range(3))
    mask = torch.tensor([[True, False, True], [False, False, False], [True, True, True]])
    output, weights = ref.scaled_dot_product_attention(Q, K, V, mask)
    assert weights[0, 1].eq(0).all() and output[0, 1].eq(0).all()
    torch.testing.assert_close(output, F.scaled_dot_product_attention(Q, K, V, attn_mask=mask))
    (output.sum() + weights.sum()).backward()
    assert all(t.grad.isfinite().all() for t in (Q, K, V))


def test_stable_for_huge_scores():
    """Scores of size 1e4 in float32 give finite weights."""
    weights = ref.masked_softmax(torch.randn(4, 6) * 1e4, torch.rand(4, 6) > 0.3)
    assert weights.isfinite().all()


def test_multi_head_matches_torch_module():
    """MultiHeadAttention equals nn.MultiheadAttention(batch_first=True) given the same weights."""
    d_model, heads = 12, 3
    torch_mha = nn.MultiheadAttention(d_model, heads, batch_first=True, dtype=torch.float64)
    ours = ref.MultiHeadAttention(d_model, heads).double()
    with torch.no_grad():
        for index, layer in enumerate((ours.w_q, ours.w_k, ours.w_v)):
            layer.weight.copy_(torch_mha.in_proj_weight[index * d_model : (index + 1) * d_model])
            layer.bias.copy_(torch_mha.in_proj_bias[index * d_model : (index + 1) * d_model])
        ours.w_o.load_state_dict(torch_mha.out_proj.state_dict())
    x, memory = randn(2, 4, d_model), randn(2, 6, d_model)
    expected, expected_weights = torch_mha(x, memory, memory, average_attn_weights=False)
    output, weights = ours(x, memory, memory)
    torch.testing.assert_close(output, expected)
    torch.testing.assert_close(weights, expected_weights)


def test_multi_head_applies_a_3d_padding_mask_to_every_head():
    """A 3-D mask from padding_mask applies to every head, also when the batch size equals the number of heads."""
    d_model, heads, B, T = 12, 3, 3, 5  # B == heads: a silent wrong broadcast would line batches up with heads
    mha = ref.MultiHeadAttention(d_model, heads).double()
    x = randn(B, T, d_model)
    mask = ref.padding_mask(torch.tensor([2, 5, 3]), T)  # (B, 1, T)
    output, weights = mha(x, x, x, mask=mask)
    expected, expected_weights = mha(x, x, x, mask=mask[:, None])  # (B, 1, 1, T)
    torch.testing.assert_close(output, expected)
    torch.testing.assert_close(weights, expected_weights)
    assert weights[0, :, :, 2:].abs().max() == 0  # no weight on the first sequence's padding, in any head


def test_dot_product_variance_is_about_d_k():
    """The empirical variance of q . k is within 10% of d_k."""
    for d_k in (4, 64, 256):
        assert abs(ref.dot_product_variance(d_k, generator=torch.Generator().manual_seed(d_k)) - d_k) < 0.1 * d_k


def test_keeps_dtype():
    """float16 and bfloat16 in, the same dtype out."""
    for dtype in (torch.float16, torch.bfloat16):
        output, weights = ref.scaled_dot_product_attention(
            randn(2, 3, 4, dtype=dtype), randn(2, 5, 4, dtype=dtype), randn(2, 5, 6, dtype=dtype)
        )
        assert output.dtype == weights.dtype == dtype
