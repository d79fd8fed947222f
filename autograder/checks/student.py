"""The student's module as the hidden checks see it: a proxy whose calls run in the worker."""

from __future__ import annotations

import inspect
import re
import typing
from collections import defaultdict

from torch import Tensor

from autograder.sandbox.protocol import GraderFault, Reply
from reference import attention as ref


class StudentFault(Exception):
    """The student's code raised, crashed, hung or returned something unusable; ``raised`` when the student's code
    itself raised an exception (not a hang, a crash or a forged reply: the runner's own findings)."""

    def __init__(self, message: str, reply: Reply | None = None) -> None:
        super().__init__(message)
        self.raised = reply is not None and not reply.ok and reply.failure is None
        self.error = reply.error if self.raised else ""  # the name of the exception the student's code raised


# The student's functions and classes: those the reference defines, in its order (the one list of them)
FUNCTIONS = tuple(
    name for name, value in vars(ref).items()
    if not name.startswith("_") and (inspect.isfunction(value) or inspect.isclass(value))
    and value.__module__ == ref.__name__
)  # fmt: skip


def _returns(value) -> str:
    """What a function of the reference returns, in words, read from its return annotation (a class: its
    ``forward``'s): a tensor, a number, nothing to check (no annotation), or a tuple of tensors named as its
    docstring's Returns section names them."""
    function = getattr(value, "forward", None) if inspect.isclass(value) else value
    if function is None:  # a class that is not a module: what its methods return is read per method (``session``)
        return ""
    returned = typing.get_type_hints(function, vars(ref)).get("return")
    if returned is None:
        return ""  # not annotated: any reply is taken as it is
    if returned in (int, float):
        return "a number"
    if typing.get_origin(returned) is tuple:
        named = re.match(r"\s*(\([\w, ]+\))", (inspect.getdoc(function) or "").partition("Returns:")[2])
        count = len(typing.get_args(returned))
        return f"a tuple {named[1]} of tensors" if named else f"a tuple of {count} tensors"
    return "a tensor"


# What each function of the API returns, from the reference: a reply of another kind is the student's failed check
# (with this message), never a grader error in the check that reads it.
RETURNS = {name: _returns(getattr(ref, name)) for name in FUNCTIONS}


def _tuple_size(function) -> int | None:
    """How many values a function of the reference returns as a tuple (its return annotation's), else None."""
    returned = typing.get_type_hints(function, vars(ref)).get("return")
    return len(typing.get_args(returned)) if typing.get_origin(returned) is tuple else None


def _returns_kind(value, kind: str) -> bool:
    if kind == "a tensor":
        return isinstance(value, Tensor)
    if kind == "a number":
        return isinstance(value, (int, float)) or (isinstance(value, Tensor) and value.numel() == 1)
    return isinstance(value, (tuple, list)) and all(isinstance(item, Tensor) for item in value)


def _gradients_problem(grads, inputs: list) -> str:
    """'' when ``grads`` is one tensor per input, of its shape and dtype; else what the reply gave instead."""
    if grads is None:
        return "no gradients for its inputs"
    if len(grads) != len(inputs):
        return f"{len(grads)} gradients for {len(inputs)} inputs"
    for index, (grad, tensor) in enumerate(zip(grads, inputs)):
        if not isinstance(grad, Tensor) or grad.shape != tensor.shape or grad.dtype != tensor.dtype:
            found = f"shape {tuple(grad.shape)}, {grad.dtype}" if isinstance(grad, Tensor) else type(grad).__name__
            return f"a gradient of input {index + 1} of {found}; expected shape {tuple(tensor.shape)}, {tensor.dtype}"
    return ""


class Student:
    """``student.masked_softmax(scores, mask)`` runs the student's function in the worker.

    Plain calls return the function's value; ``run`` returns the whole reply (gradients,
    mutation flags). Every fused-attention op a call ran is remembered per function.
    """

    def __init__(self, sandbox, timeout: float) -> None:
        self._sandbox = sandbox
        self._timeout = timeout
        self.ops: dict[str, set[str]] = defaultdict(set)
        self.entered: dict[str, set[str]] = defaultdict(
            set
        )  # per function called, the submission's functions it entered

    def run(self, target: str, *args, grad=(), grad_outputs=None, pages=False, **kwargs) -> Reply:
        """The whole reply. Every call's reply holds the memory its process took (``reply.grown_bytes``, measured by
        the runner from outside it) and the largest tensor it made (``reply.memory``, the worker's record: words
        only); ``pages``: and the pages it touched (``reply.touched_bytes``, counted by the runner, never sent to the
        worker)."""
        options = {"pages": True} if pages else {}
        return self._call(target, args, kwargs, grad=list(grad), grad_outputs=grad_outputs, **options)

    def mha(self, init: tuple, state: dict, *args, grad=(), grad_outputs=None, **kwargs) -> Reply:
        """Build MultiHeadAttention(*init) in the worker, load ``state`` into it, call it."""
        options = {"init": list(init), "state": state, "grad": list(grad), "grad_outputs": grad_outputs}
        return self._call("MultiHeadAttention", args, kwargs, **options)

    def session(
        self, target: str, make: tuple, steps: list[dict], *args, grad=(), grad_outputs=None
    ) -> tuple[list, Reply]:
        """Make ``make[0](*make[1:])`` in the worker and run ``steps`` on it in one call (serving's ``_stepping``: each
        step a method of the object or a function of the module, its arguments indices into ``args``, None or
        "object"); ``target`` names what is graded (its ops, a hang). Returns per
        step [its value, len(object)], each value of the kind its function or method returns (``RETURNS``), each
        length an int, and the whole reply (gradients, mutation flags)."""
        options = {"make": list(make), "steps": steps, "grad": list(grad), "grad_outputs": grad_outputs}
        reply = self._call(target, args, {}, **options)
        results = reply.value
        if not (isinstance(results, (list, tuple)) and len(results) == len(steps)):
            raise StudentFault(f"{target}: the steps gave no answer per step")
        for step, result in zip(steps, results):
            name = step.get("method") or step.get("function")
            owner = getattr(ref, make[0]) if "method" in step else ref
            kind = _returns(getattr(owner, name))
            value, length = result if isinstance(result, (list, tuple)) and len(result) == 2 else (None, None)
            if kind and not _returns_kind(value, kind):
                found = "None" if value is None else type(value).__name__
                raise StudentFault(f"{name} returned {found}; expected {kind}")
            count = _tuple_size(getattr(owner, name))
            if count and len(value) != count:
                raise StudentFault(f"{name} returned {len(value)} values; expected {kind}")
            if type(length) is not int:
                raise StudentFault(f"len() of {make[0]} gave {type(length).__name__}; expected an int")
        return [list(result) for result in results], reply

    def timed(
        self, target: str, inputs: list[list], outputs: list[tuple], device: str = "cpu", kwargs: dict | None = None
    ) -> Reply:
        """One call per entry of ``inputs`` (with ``kwargs``), timed from this process; ``outputs`` gives each
        result's (shape, dtype).

        The reply's ``seconds`` (our wall clock) and ``cpu_seconds`` (the kernel's count of the
        worker's CPU time) bound the whole round; ``outputs`` holds what each call returned.
        """
        options = {"kwargs": kwargs} if kwargs else {}
        reply = self._sandbox.timed(target, inputs, outputs, timeout=self._timeout, device=device, **options)
        self._raise_for(target, reply)
        return reply

    def _call(self, target: str, args: tuple, kwargs: dict, **options) -> Reply:
        reply = self._sandbox.call(target, args, kwargs, timeout=self._timeout, **options)
        return self._read(target, args, reply, options)

    def _read(self, target: str, args: tuple, reply: Reply, options: dict) -> Reply:
        """The reply as the checks take it: of the kind its function returns, gradients of its inputs' shapes, or the
        student's failure (``StudentFault``)."""
        kind = RETURNS.get(target) if "steps" not in options else ""  # a session's steps are read by ``session``
        if reply.ok and kind and not _returns_kind(reply.value, kind):
            found = "None" if reply.value is None else type(reply.value).__name__
            raise StudentFault(f"{target} returned {found}; expected {kind}")
        if reply.ok and options.get("grad_outputs") is not None:
            problem = _gradients_problem(reply.grads, [args[index] for index in options["grad"]])
            if problem:
                raise StudentFault(f"{target} gave {problem}")
        self._raise_for(target, reply)
        return reply

    def _raise_for(self, target: str, reply: Reply) -> None:
        self.ops[target].update(reply.ops)
        self.entered[target].update(reply.entered)
        if reply.ok:
            return
        if reply.error == "NotImplementedError":
            raise StudentFault(f"{target} is not implemented yet (it raises NotImplementedError)", reply)
        raise StudentFault(f"{target} failed: {reply.describe()}", reply)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.run(name, *args, **kwargs).value


class Reference(Student):
    """The reference solution behind the same proxy, in a worker of the same kind: timed as the student is.

    Its failures are the grader's, never the student's."""

    def _raise_for(self, target: str, reply: Reply) -> None:
        if not reply.ok:
            raise GraderFault(f"the reference's worker failed in {target}: {reply.describe()}")
