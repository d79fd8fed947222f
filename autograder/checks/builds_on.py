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


def evidence_tolerance(settings, Q, K, V) -> tuple[float, float]:
    """The settings' tolerance for these inputs' dtype and size: what ``raised_in`` holds a result to for a check
    that judges no values of its own (the lesson's shapes, no mutation)."""
    from autograder.checks.expect import attention_size, dtype_name

    return settings.tolerance(dtype_name(Q.dtype), scale=attention_size(Q, K, V))


def raised_in(loaded, tolerance, Q, K, V, mask, is_causal, expected, grad_outputs=None) -> str:
    """The student's own step whose exception made their attention raise on these inputs, shown to be the only
    cause: the attention recomposed from the student's steps raises in that step (a step the attention is found to
    enter below), the step raises or errs on the reference's own input to it too, and the student's attention,
    run again with that one step standing in with the reference's result (only the result, for exactly that input:
    serving's ``substitute``), gives ``expected`` (output, weights). With ``grad_outputs`` (the output's and the
    weights' gradients), each of the student's other steps the attention entered also gives the reference's
    vector-Jacobian product there. "" otherwise.
    """
    path: dict = {}
    try:

        def theirs(name, *args):
            return getattr(loaded, name)(*args)

        def reference(name, *args):
            path[name] = args
            return getattr(ref, name)(*args)

        _forward(reference, Q, K, V, mask, is_causal)
        upstream = _upstream(path, grad_outputs) if grad_outputs is not None else {}
    except Exception:  # the grader's own recomposition does not run on these inputs: no evidence
        return ""
    raising = ""

    def recomposed(name, *args):
        nonlocal raising
        try:
            return theirs(name, *args)
        except Exception:
            raising = raising or name
            raise

    try:
        _forward(recomposed, Q, K, V, mask, is_causal)
    except Exception:
        pass
    if not raising or raising not in path:
        return ""
    try:
        if _same_step(theirs, raising, path, tolerance):
            return ""
    except Exception:
        pass  # it raises on the reference's input too: wrong there
    try:
        standing_in = {raising: {"args": list(path[raising]), "value": getattr(ref, raising)(*path[raising])}}
        reply = loaded.run(
            "scaled_dot_product_attention", Q, K, V, mask=mask, is_causal=is_causal, substitute=standing_in
        )
        output, weights = reply.value
        if raising not in reply.entered or not (
            matches(output, expected[0], tolerance) and matches(weights, expected[1], tolerance)
        ):
            return ""
        for name in DIFFERENTIABLE if grad_outputs is not None else ():
            if name != raising and name in reply.entered:
                got = loaded.run(name, *path[name], grad=DIFFERENTIABLE[name], grad_outputs=[upstream[name]]).grads
                expected_grads = _reference_vjp(name, path[name], upstream[name])
                if not all(matches(g, e, tolerance) for g, e in zip(got, expected_grads)):
                    return ""
    except Exception:  # the stand-in was not called as the reference calls it, or another step fails: no evidence
        return ""
    return raising
