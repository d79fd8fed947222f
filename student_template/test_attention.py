"""Public tests: small examples you can check by hand. Run `pytest` in this folder.

Passing them is a good sign, not a guarantee: the grader checks more cases (other shapes,
masks, dtypes, gradients) on inputs you do not see.
"""

import math

import torch
import torch.nn.functional as F

from attention import (
    MultiHeadAttention,
    attention_output,
    attention_scores,
    causal_mask,
    dot_product_variance,
    masked_softmax,
    padding_mask,
    scale_scores,
    scaled_dot_product_attention,
)


def close(actual, expected, atol=1e-5, rtol=1.3e-6):
    """actual is within atol + rtol*|expected| of expected; if not, say so in one line: expected vs got,
    the largest difference and where."""
    expected = torch.as_tensor(expected, dtype=actual.dtype)
    if actual.shape != expected.shape:
        raise AssertionError(f"expected shape {tuple(expected.shape)}, got {tuple(actual.shape)}")
    got, want = actual.detach().double(), expected.double()
    difference = (got - want).abs().nan_to_num(math.inf, math.inf, math.inf)
    difference[got.isnan() & want.isnan()] = 0.0
    allowed = atol + rtol * want.abs()
    if not bool((difference > allowed).any()):
        return
    index = tuple(int(i) for i in torch.unravel_index((difference - allowed).argmax(), difference.shape))
    largest = f"{difference[index].item():.3g} (allowed {allowed[index].item():.2g})"
    if actual.numel() <= 8:
        raise AssertionError(f"expected {want.round(decimals=6).tolist()}, got {got.round(decimals=6).tolist()};"
                             f" largest difference {largest} at index {index}")
    raise AssertionError(f"expected {want[index].item():.6g}, got {got[index].item():.6g} at index {index} of shape"
                         f" {tuple(actual.shape)}, the largest difference: {largest}")


def test_attention_scores_by_hand():
    """Each score is one query dotted with one key: (2, 2) x (3, 2) -> (2, 3)."""
    Q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    K = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    close(attention_scores(Q, K), [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]])


def test_scale_scores_by_hand():
    """With d_k = 4 the scores are divided by sqrt(4) = 2."""
    close(scale_scores(torch.tensor([[4.0, -8.0]]), 4), [[2.0, -4.0]])


def test_causal_mask_square_and_wide():
    """Query i sees keys 0..i; with more keys than queries the mask stays top-left aligned."""
    assert causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    assert causal_mask(2, 4).tolist() == [[True, False, False, False], [True, True, False, False]]
    assert causal_mask(2).dtype == torch.bool


def test_padding_mask_one_length_per_sequence():
    """Lengths (1, 3) with 4 keys: a (B, 1, T_k) mask, True for the real keys."""
    mask = padding_mask(torch.tensor([1, 3]), 4)
    assert mask.shape == (2, 1, 4)
    assert mask.tolist() == [[[True, False, False, False]], [[True, True, True, False]]]


def test_masked_softmax_by_hand():
    """softmax([0, ln 3]) = [1/4, 3/4]; masking the second key gives [1, 0]."""
    scores = torch.tensor([[0.0, math.log(3.0)]])
    close(masked_softmax(scores), [[0.25, 0.75]])
    close(masked_softmax(scores, torch.tensor([[True, False]])), [[1.0, 0.0]])


def test_masked_softmax_fully_masked_row_is_zero_not_nan():
    """A row whose keys are all masked gets weights 0, never NaN."""
    weights = masked_softmax(torch.zeros(2, 3), torch.tensor([[True, True, True], [False, False, False]]))
    close(weights, [[1 / 3, 1 / 3, 1 / 3], [0.0, 0.0, 0.0]])


def test_attention_output_by_hand():
    """Weights (1/2, 1/2) average the two value rows."""
    close(attention_output(torch.tensor([[0.5, 0.5]]), torch.tensor([[2.0, 0.0], [0.0, 4.0]])), [[1.0, 2.0]])


def test_scaled_dot_product_attention_lesson_shapes():
    """The lesson's question: (B, T, d_k), (B, T, d_k), (B, T, d_v) -> output (B, T, d_v), weights (B, T, T)."""
    B, T, d_k, d_v = 32, 50, 64, 128  # the lesson's sizes (the handout's example)
    torch.manual_seed(0)
    Q, K, V = torch.randn(B, T, d_k), torch.randn(B, T, d_k), torch.randn(B, T, d_v)
    output, weights = scaled_dot_product_attention(Q, K, V)
    assert output.shape == (B, T, d_v)
    assert weights.shape == (B, T, T)
    close(output, F.scaled_dot_product_attention(Q, K, V))


def test_scaled_dot_product_attention_causal_by_hand():
    """Equal scores everywhere: query i spreads its weight evenly over keys 0..i."""
    Q = K = torch.zeros(1, 3, 2)
    _, weights = scaled_dot_product_attention(Q, K, torch.zeros(1, 3, 2), is_causal=True)
    close(weights[0], [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]])


def test_scaled_dot_product_attention_padded_batch():
    """Padded keys get no weight, and the output matches PyTorch's own attention."""
    torch.manual_seed(1)
    Q, K, V = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    mask = padding_mask(torch.tensor([2, 5]), 5)
    output, weights = scaled_dot_product_attention(Q, K, V, mask=mask)
    close(weights[0, :, 2:], torch.zeros(3, 3))  # the padded keys 2, 3, 4 of the first sequence
    close(output, F.scaled_dot_product_attention(Q, K, V, attn_mask=mask))


def test_scaled_dot_product_attention_fully_masked_row():
    """A query that may attend to nothing gets zero weights and a zero output."""
    Q, K, V = torch.ones(1, 2, 4), torch.ones(1, 3, 4), torch.ones(1, 3, 4)
    mask = torch.tensor([[True, True, True], [False, False, False]])
    output, weights = scaled_dot_product_attention(Q, K, V, mask=mask)
    close(weights[0, 1], [0.0, 0.0, 0.0])
    close(output[0, 1], [0.0, 0.0, 0.0, 0.0])


def test_MultiHeadAttention_shapes():
    """Two heads over d_model = 8: output (B, T_q, d_model), weights (B, heads, T_q, T_k)."""
    mha = MultiHeadAttention(8, 2)
    output, weights = mha(torch.randn(3, 4, 8), torch.randn(3, 5, 8), torch.randn(3, 5, 8))
    assert output.shape == (3, 4, 8)
    assert weights.shape == (3, 2, 4, 5)


def test_MultiHeadAttention_matches_torch():
    """With the same weights as nn.MultiheadAttention(batch_first=True): the same per-head weights and output."""
    torch.manual_seed(2)
    mha = MultiHeadAttention(6, 2)  # d_model = 6, two heads of 3 features
    torch_mha = torch.nn.MultiheadAttention(6, 2, batch_first=True)
    with torch.no_grad():  # torch keeps the three input projections in one matrix: w_q, w_k, w_v stacked
        torch_mha.in_proj_weight.copy_(torch.cat([mha.w_q.weight, mha.w_k.weight, mha.w_v.weight]))
        torch_mha.in_proj_bias.copy_(torch.cat([mha.w_q.bias, mha.w_k.bias, mha.w_v.bias]))
        torch_mha.out_proj.weight.copy_(mha.w_o.weight)
        torch_mha.out_proj.bias.copy_(mha.w_o.bias)
    query, key = torch.randn(3, 4, 6), torch.randn(3, 5, 6)
    output, weights = mha(query, key, key)
    expected_output, expected_weights = torch_mha(query, key, key, average_attn_weights=False)
    close(weights, expected_weights.detach())  # (B, heads, T_q, T_k): wrong when the heads are split wrongly
    close(output, expected_output.detach())  # (B, T_q, d_model): wrong when the heads are merged wrongly


def test_dot_product_variance_grows_like_d_k():
    """Var(q . k) is about d_k: this is why the scores are divided by sqrt(d_k)."""
    variance = dot_product_variance(16, generator=torch.Generator().manual_seed(0))
    assert 13.0 < variance < 19.0
