"""Which of the student's own functions a failure of scaled_dot_product_attention builds on, with evidence.

The attention is recomputed step by step by the reference's own code: its ``scaled_dot_product_attention`` runs
with each function of the reference it calls (its steps, ``STEPS``, read from its source: ``attention_scores``,
``scale_scores``, ``causal_mask``, ``masked_softmax``, ``attention_output``) done by the student's or the
reference's function, twice:

- as the student's: each step by the student's own function where the attention entered it (the worker's
  record of this call) and by the reference's elsewhere, each on the step before's result. It must
  reproduce the student's result, wrong values and NaN included, or nothing is claimed;
- on the reference's path: each step the attention entered, by the student's function, on the reference's
  own results of the steps before. The steps whose result differs there from the reference's are what the
  failure builds on: with them fixed, every step gives the reference's result on the reference's path, so
  the attention (which the first recomputation shows is that composition) gives the expected one.

For gradients the same, through autograd's graph of that composition, each step's backward its
vector-Jacobian product (the worker's gradients of that one function, given the next step's gradient). Any step that
fails, or gives what the next cannot take, is no evidence: nothing is claimed.
"""

from __future__ import annotations

import inspect
import types

import torch

from autograder.assignment.composition import calls
from autograder.checks.expect import matches, reproduces
from reference import attention as ref

COMPOSED = "scaled_dot_product_attention"  # the function recomposed here from the student's steps


# the reference's functions its attention calls, in the order it calls them: the steps, read from its source
STEPS = calls(inspect.getsource(ref))[COMPOSED]


def _differentiable(args) -> tuple[int, ...]:
    """The positions of a step's floating-point tensor arguments: those its vector-Jacobian product is taken for."""
    return tuple(i for i, arg in enumerate(args) if isinstance(arg, torch.Tensor) and arg.is_floating_point())


class _Step(torch.autograd.Function):
    """One step of the composition in autograd's graph: its forward is ``run``'s result, its backward ``vjp``'s
    (the student's or the reference's vector-Jacobian product of that one function)."""

    @staticmethod
    def forward(ctx, name, run, vjp, *args):
        ctx.name, ctx.vjp = name, vjp
        ctx.args = tuple(arg.detach() if isinstance(arg, torch.Tensor) else arg for arg in args)
        return run(name, *ctx.args)

    @staticmethod
    def backward(ctx, upstream):
        grads = [None] * len(ctx.args)
        with torch.enable_grad():  # autograd runs a backward without it; the reference's VJP needs its own graph
            found = ctx.vjp(ctx.name, ctx.args, upstream)
        for index, grad in zip(_differentiable(ctx.args), found):
            grads[index] = grad
        return (None, None, None, *grads)


def _composed(run, vjp=None):
    """The reference's ``scaled_dot_product_attention``, its own code, with each step it calls done by ``run(name,
    *args)`` (a device passed by keyword is left out: the grader recomposes on the CPU, and the wire carries no
    device); with ``vjp``, each step is a node of autograd's graph whose backward is ``vjp(name, args, upstream)``."""

    def step(name):
        def call(*args, **kwargs):
            kwargs = {key: value for key, value in kwargs.items() if not isinstance(value, torch.device)}
            if kwargs:
                raise TypeError(f"{name} is called with keyword arguments {sorted(kwargs)}, not recomposed here")
            return _Step.apply(name, run, vjp, *args) if vjp is not None else run(name, *args)

        return call

    function = getattr(ref, COMPOSED)
    namespace = {**vars(ref), **{name: step(name) for name in STEPS}}
    return types.FunctionType(function.__code__, namespace, function.__name__, function.__defaults__)


def _forward(run, Q, K, V, mask, is_causal) -> tuple[torch.Tensor, torch.Tensor]:
    """(output, weights), composed as the reference composes them, each step by ``run(name, *args)``."""
    return _composed(run)(Q, K, V, mask, is_causal)


def _gradients(output, weights, inputs, grad_outputs) -> list[torch.Tensor]:
    """The gradients of the inputs (Q, K, V) through a composition built with a ``vjp`` (each step's backward),
    given the output's and the weights' gradients."""
    grads = torch.autograd.grad((output, weights), inputs, grad_outputs, allow_unused=True)
    return [torch.zeros_like(x) if g is None else g for x, g in zip(inputs, grads)]


def _reference_vjp(name, args, upstream):
    differentiable = _differentiable(args)
    inputs = [args[i].detach().clone().requires_grad_(True) for i in differentiable]
    full = list(args)
    for i, tensor in zip(differentiable, inputs):
        full[i] = tensor
    grads = torch.autograd.grad(getattr(ref, name)(*full), inputs, upstream, allow_unused=True)
    return [torch.zeros_like(x) if g is None else g for x, g in zip(inputs, grads)]


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
        return list(loaded.run(name, *args, grad=_differentiable(args), grad_outputs=[upstream]).grads)

    def vjp_as_theirs(name, args, upstream):
        return own_vjp(name, args, upstream) if name in entered else _reference_vjp(name, args, upstream)

    def as_theirs(name, *args):
        return own(name, *args) if name in entered else getattr(ref, name)(*args)

    try:
        with_grads = grad_outputs is not None
        inputs = [x.detach().requires_grad_(with_grads) for x in (Q, K, V)]
        output, weights = _composed(as_theirs, vjp_as_theirs if with_grads else None)(*inputs, mask, is_causal)
        if not (
            reproduces(output.detach(), result[0], tolerance) and reproduces(weights.detach(), result[1], tolerance)
        ):
            return ()
        path, upstream = _reference_path(Q, K, V, mask, is_causal, grad_outputs)
        wrong = [name for name in STEPS if name in path and name in entered and not _same_step(own, name, path, steps)]
        if with_grads:
            recomputed = _gradients(output, weights, inputs, grad_outputs)
            if not all(reproduces(mine, theirs, tolerance) for mine, theirs in zip(recomputed, grads)):
                return ()
            for name in STEPS:
                if name in entered and name not in wrong and name in upstream:
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


def _reference_path(Q, K, V, mask, is_causal, grad_outputs=None) -> tuple[dict, dict]:
    """The reference's input to each step (its path), and with ``grad_outputs``, the gradient that reaches each
    differentiable step's result there (what its VJP is given)."""
    path: dict = {}
    upstream: dict = {}

    def run(name, *args):
        path[name] = args
        return getattr(ref, name)(*args)

    def vjp(name, args, grad):
        upstream[name] = grad
        return _reference_vjp(name, args, grad)

    inputs = [x.detach().requires_grad_(grad_outputs is not None) for x in (Q, K, V)]
    output, weights = _composed(run, vjp if grad_outputs is not None else None)(*inputs, mask, is_causal)
    if grad_outputs is not None:
        _gradients(output, weights, inputs, grad_outputs)
    return path, upstream


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

    def theirs(name, *args):
        return getattr(loaded, name)(*args)

    try:
        path, upstream = _reference_path(Q, K, V, mask, is_causal, grad_outputs)
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
        for name in STEPS:
            if name != raising and name in reply.entered and name in upstream:
                got = loaded.run(
                    name, *path[name], grad=_differentiable(path[name]), grad_outputs=[upstream[name]]
                ).grads
                expected_grads = _reference_vjp(name, path[name], upstream[name])
                if not all(matches(g, e, tolerance) for g, e in zip(got, expected_grads)):
                    return ""
    except Exception:  # the stand-in was not called as the reference calls it, or another step fails: no evidence
        return ""
    return raising
