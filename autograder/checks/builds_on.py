"""Which of the student's own functions a failure of scaled_dot_product_attention builds on, with evidence.

The attention is recomputed step by step, as the reference composes it (``attention_scores``,
``scale_scores``, ``causal_mask``, ``masked_softmax``, ``attention_output``), twice:

- as the student's: each step by the student's own function where the attention entered it (the worker's
  record of this call) and by the reference's elsewhere, each on the step before's result. It must
  reproduce the student's result, wrong values and NaN included, or nothing is claimed;
- on the reference's path: each step the attention entered, by the student's function, on the reference's
  own results of the steps before. The steps whose result differs there from the reference's are what the
  failure builds on: with them fixed, every step gives the reference's result on the reference's path, so
  the attention (which the first recomputation shows is that composition) gives the expected one.

For gradients the same, with each step's vector-Jacobian product (the worker's gradients of that one
function, given the next step's gradient). Any step that fails, or gives what the next cannot take, is
no evidence: nothing is claimed.
"""

from __future__ import annotations

import torch

from autograder.checks.expect import matches, reproduces
from reference import attention as ref

STEPS = ("attention_scores", "scale_scores", "causal_mask", "masked_softmax", "attention_output")
DIFFERENTIABLE = {"attention_scores": (0, 1), "scale_scores": (0,), "masked_softmax": (0,), "attention_output": (0, 1)}


def _forward(run, Q, K, V, mask, is_causal) -> tuple[torch.Tensor, torch.Tensor]:
    scores = run("attention_scores", Q, K)
    scaled = run("scale_scores", scores, Q.size(-1))
    full = mask
    if is_causal:
        causal = run("causal_mask", Q.size(-2), K.size(-2))
        full = causal if mask is None else mask & causal
    weights = run("masked_softmax", scaled, full)
    return run("attention_output", weights, V), weights


def _reference_vjp(name, args, upstream):
    inputs = [args[i].detach().clone().requires_grad_(True) for i in DIFFERENTIABLE[name]]
    full = list(args)
    for i, tensor in zip(DIFFERENTIABLE[name], inputs):
        full[i] = tensor
    grads = torch.autograd.grad(getattr(ref, name)(*full), inputs, upstream, allow_unused=True)
    return [torch.zeros_like(x) if g is None else g for x, g in zip(inputs, grads)]


def _backward(vjp, trace, grad_outputs):
    """Gradients of Q, K, V through the traced steps, given the output's and the weights' gradients."""
    grad_output, grad_weights = grad_outputs
    from_output, grad_v = vjp("attention_output", trace["attention_output"], grad_output)
    (grad_scaled,) = vjp("masked_softmax", trace["masked_softmax"], grad_weights + from_output)
    (grad_scores,) = vjp("scale_scores", trace["scale_scores"], grad_scaled)
    grad_q, grad_k = vjp("attention_scores", trace["attention_scores"], grad_scores)
    return [grad_q, grad_k, grad_v]


def builds_on(
    loaded, tolerance, entered, Q, K, V, mask, is_causal, result, grad_outputs=None, grads=None, steps=None
) -> tuple[str, ...]:
    """The student's functions (in STEPS' order) whose fix makes this result right, with the evidence above, or ().

    ``result`` is the student's (output, weights) for these inputs; with ``grad_outputs``, ``grads`` are the
    student's gradients of Q, K and V, and the gradients are what must be reproduced and made right.
    ``steps`` is the tolerance a step must keep to count as right (default ``tolerance``): in float16 and
    bfloat16 the check's own allowance would take a softmax over the wrong axis for right.
    """
    steps = steps or tolerance
    entered = set(entered) & set(STEPS)
    if not entered:
        return ()

    def own(name, *args):
        return getattr(loaded, name)(*args)

    def own_vjp(name, args, upstream):
        return list(loaded.run(name, *args, grad=DIFFERENTIABLE[name], grad_outputs=[upstream]).grads)

    def tracing(trace, student):
        def run(name, *args):
            trace[name] = args
            return own(name, *args) if student and name in entered else getattr(ref, name)(*args)

        return run

    try:
        as_theirs: dict = {}
        output, weights = _forward(tracing(as_theirs, True), Q, K, V, mask, is_causal)
        if not (reproduces(output, result[0], tolerance) and reproduces(weights, result[1], tolerance)):
            return ()
        path: dict = {}
        _forward(tracing(path, False), Q, K, V, mask, is_causal)
        wrong = [name for name in STEPS if name in path and name in entered and not _same_step(own, name, path, steps)]
        if grad_outputs is not None:

            def vjp_as_theirs(name, args, upstream):
                return own_vjp(name, args, upstream) if name in entered else _reference_vjp(name, args, upstream)

            recomputed = _backward(vjp_as_theirs, as_theirs, grad_outputs)
            if not all(reproduces(mine, theirs, tolerance) for mine, theirs in zip(recomputed, grads)):
                return ()
            upstream = _upstream(path, grad_outputs)
            for name in DIFFERENTIABLE:
                if name in entered and name not in wrong:
                    expected = _reference_vjp(name, path[name], upstream[name])
                    got = own_vjp(name, path[name], upstream[name])
                    if not all(matches(g, e, steps) for g, e in zip(got, expected)):
                        wrong.append(name)
    except Exception:  # a step fails, or gives what the next cannot take: no evidence
        return ()
    return tuple(name for name in STEPS if name in wrong)


def _same_step(own, name, path, tolerance) -> bool:
    """The student's step gives the reference's result on the reference's input to it."""
    return matches(own(name, *path[name]), getattr(ref, name)(*path[name]), tolerance)


def _upstream(path, grad_outputs) -> dict:
    """The gradient that reaches each step's result on the reference's path (what its VJP is given)."""
    upstream = {}

    def vjp(name, args, grad):
        upstream[name] = grad
        return _reference_vjp(name, args, grad)

    _backward(vjp, path, grad_outputs)
    return upstream
