"""MultiHeadAttention against nn.MultiheadAttention, and dot_product_variance."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from autograder.checks.cases import both_orders
from autograder.checks.expect import Cases, CheckFailure, attention_size, expect_tensor, fail
from autograder.checks.mistakes import mha_variants
from autograder.checks.student import StudentFault


def _torch_mha(draw, d_model, heads, bias):
    """nn.MultiheadAttention with random weights, and the same weights under the handout's names."""
    torch_mha = nn.MultiheadAttention(d_model, heads, bias=bias, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        for param in torch_mha.parameters():
            param.copy_(draw.normal(*param.shape, scale=d_model**-0.5))
    state = {}
    for index, name in enumerate(("w_q", "w_k", "w_v")):
        state[f"{name}.weight"] = torch_mha.in_proj_weight[index * d_model : (index + 1) * d_model].detach().clone()
        if bias:
            state[f"{name}.bias"] = torch_mha.in_proj_bias[index * d_model : (index + 1) * d_model].detach().clone()
    state["w_o.weight"] = torch_mha.out_proj.weight.detach().clone()
    if bias:
        state["w_o.bias"] = torch_mha.out_proj.bias.detach().clone()
    return torch_mha, state


def _project(state, x, name):
    return F.linear(x, state[f"{name}.weight"], state.get(f"{name}.bias"))


def _split(x, heads):  # (B, T, d_model) -> (B, H, T, d_head)
    B, T, d_model = x.shape
    return x.view(B, T, heads, d_model // heads).transpose(1, 2)


def _compare(
    loaded,
    settings,
    label,
    torch_mha,
    state,
    init,
    query,
    key,
    value,
    mask=None,
    is_causal=False,
    torch_mask=None,
    key_padding=None,
):
    expected_out, expected_weights = torch_mha(
        query,
        key,
        value,
        attn_mask=torch_mask,
        key_padding_mask=key_padding,
        need_weights=True,
        average_attn_weights=False,
    )
    heads = init[1]
    projected = [_project(state, x, name) for x, name in ((query, "w_q"), (key, "w_k"), (value, "w_v"))]
    size = attention_size(*(_split(x, heads) for x in projected))
    tolerance = settings.tolerance("float64", scale=size)
    reply = loaded.mha(init, state, query, key, value, mask=mask, is_causal=is_causal)
    result = reply.value
    if not (isinstance(result, tuple) and len(result) == 2):
        fail(f"MultiHeadAttention {label}: forward should return (out, weights), got {type(result).__name__}")
    variants = {
        name: (_project(state, out, "w_o"), weights)
        for name, (out, weights) in mha_variants(projected, heads, mask, is_causal).items()
    }
    # the weights first: a wrong split shows there, a wrong merge only in the output
    expect_tensor(
        result[1],
        expected_weights.detach(),
        what=f"MultiHeadAttention's weights {label}",
        tolerance=tolerance,
        variants={name: w for name, (_, w) in variants.items()},
        scale=size,
    )
    expect_tensor(
        result[0],
        expected_out.detach(),
        what=f"MultiHeadAttention's output {label}",
        tolerance=tolerance,
        variants={name: out for name, (out, _) in variants.items()},
        scale=size,
    )


@pytest.mark.check(function="MultiHeadAttention", category="multi-head", points=4, exercises=(), picture=None)
def test_mha_matches_torch(loaded, draw, settings):
    """Same output and per-head weights as nn.MultiheadAttention(batch_first=True) with the same weights.

    With and without bias, each with fewer queries than keys and with more, on every draw.
    """
    heads, d_head, B, *lengths = draw.sizes(5, low=2, high=9)
    d_model = heads * d_head
    held = Cases()
    for bias in (True, False):
        torch_mha, state = _torch_mha(draw, d_model, heads, bias)
        init = (d_model, heads, bias)
        for T_q, T_k, order in both_orders(*lengths):
            query, key = draw.normal(B, T_q, d_model), draw.normal(B, T_k, d_model)
            value = draw.normal(B, T_k, d_model)
            with held:
                _compare(loaded, settings, f"with bias={bias}, {order}", torch_mha, state, init, query, key, value)
    held.done()


@pytest.mark.check(
    function="MultiHeadAttention", category="multi-head", points=2, exercises=("mask", "causal"), picture=None
)
def test_mha_masks(loaded, draw, settings):
    """Padding masks (B, 1, 1, T_k) and (B, 1, T_k), as padding_mask returns, over keys of another length than the
    queries (fewer queries than keys and more, on every draw), and is_causal=True act as in torch."""
    heads, d_head, B, *lengths = draw.sizes(5, low=2, high=9)
    d_model = heads * d_head
    torch_mha, state = _torch_mha(draw, d_model, heads, True)
    init = (d_model, heads, True)
    held = Cases()
    for T, T_k, order in both_orders(*lengths):
        x = draw.normal(B, T, d_model)
        memory = draw.normal(B, T_k, d_model)  # what the queries attend to: a mask sized by the queries does not fit
        keep = draw.mask(B, T_k)
        # the first sequence may attend to every key on every draw: where every row drew a single allowed key (a short
        # T_k with few keys kept: seed 47 of tests/checks/test_same_words.py) any scale gives the same weights, and a
        # scale mistake showed only in the causal case, in other words than on the other seeds
        keep[0] = True
        with held:
            mask = keep[:, None, None, :]
            label = f"with a padding mask, {order}"
            _compare(loaded, settings, label, torch_mha, state, init, x, memory, memory, mask=mask, key_padding=~keep)
        try:  # the same mask without the head axis: a failure of its own here is the missing head axis
            with held:  # (one the module's own attention explains is held)
                label, mask = f"with a (B, 1, T_k) padding mask, {order}", keep[:, None, :]
                _compare(
                    loaded, settings, label, torch_mha, state, init, x, memory, memory, mask=mask, key_padding=~keep
                )
        except CheckFailure as error:
            fail(error.what, "mask_head_axis")
        except StudentFault as error:
            fail(f"{label}, {error}", "mask_head_axis")
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    with held:
        _compare(
            loaded, settings, "with is_causal=True", torch_mha, state, init, x, x, x, is_causal=True, torch_mask=~causal
        )
    held.done()


def _variance(loaded, d_k, num_samples, seed):
    value = loaded.dot_product_variance(d_k, num_samples, generator={"$generator": seed})
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        fail(f"dot_product_variance({d_k}) returned {type(value).__name__}, expected a float")
    return float(value)


@pytest.mark.check(function="dot_product_variance", category="variance", points=2, exercises=(), picture=None)
def test_variance_close(loaded, draw, settings):
    """The empirical variance of q . k is close to d_k, for several d_k.

    Within `variance_rtol` (10%) of d_k for d_k = 8, 64 and 256.
    """
    rtol = settings.tolerance.variance_rtol
    for d_k in (8, 64, 256):
        value = _variance(loaded, d_k, 10000, draw.integer(0, 2**31))
        if not math.isfinite(value) or abs(value - d_k) > rtol * d_k:
            hint = "the variance of q . k should be about d_k"
            if math.isfinite(value) and abs(value - 1) < 0.2:
                hint = "about 1 is the variance after scaling; return the variance of the raw dot products"
            elif math.isfinite(value) and abs(value - math.sqrt(d_k)) < 0.2 * math.sqrt(d_k):
                hint = "about sqrt(d_k) is the standard deviation; return the variance"
            fail(f"dot_product_variance({d_k}) is {value:.4g}, more than {rtol:.0%} away from d_k = {d_k}", hint=hint)


@pytest.mark.check(function="dot_product_variance", category="variance", points=1, exercises=(), picture=None)
def test_variance_uses_generator(loaded, draw, settings):
    """The result comes from samples drawn with the given generator: same seed, same value; new seed, new value.

    Catches a hard-coded d_k.
    """
    d_k = draw.integer(8, 32)
    seeds = [draw.integer(0, 2**31) for _ in range(4)]
    first, again = _variance(loaded, d_k, 8, seeds[0]), _variance(loaded, d_k, 8, seeds[0])
    if first != again:
        fail(
            "dot_product_variance gave two different values for the same generator seed; draw with generator=generator"
        )
    values = {first} | {_variance(loaded, d_k, 8, seed) for seed in seeds[1:]}
    if len(values) == 1:
        fail(
            "dot_product_variance gives the same value for every generator; it must estimate the variance from samples"
        )
