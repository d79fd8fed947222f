"""Whether a failed check fails only because of the student's own functions its function builds on: decided by running
the check again with those functions answered by the reference.

A check of a function f that failed is run again, on the same inputs (its ``draw`` seeded as before), through
``Substituted``: a proxy whose every call runs the student's f in the worker with each function g of ``standing_in``
answered from a table of the reference's results (``recording._Table``: the student's g is never run where the table
holds the answer). The table is filled in rounds: the worker notes each call of g (and each backward through it) that
the table cannot answer and runs the student's own there; the grader computes the reference's answers to exactly those
arguments, on its own side, and runs the call again, until a call asks nothing new (``ROUNDS`` at most). Only the
reference's results cross, never its code; whatever f does with them comes back to the grader alone, and the student
receives nothing of the run but the verdict (the check's points, kept or not).

A class stands in by the same rule (the decoding part's KVCache for attend_with_cache): an object's answers are a
function of its constructor's arguments and the calls made on it so far, so the worker's stand-in object
(``recording._stand_in_class``) asks, for each call of a method (dunders such as ``len()`` included) or read of a public
attribute, the question ``[n, *constructor's arguments, method, m, *its arguments, ...]``, and the grader answers it by
making the reference's class with those arguments and replaying the calls on it (``_replayed``): the last call's
result, if it is plain (tensors, numbers, tuples of them: ``_result``), is the answer; the object stays here. A question
is read with its bounds before anything runs (``_steps``: ``MAX_STEPS`` calls, ``MAX_ELEMENTS`` elements in all, only
methods the reference's class defines); its gradients are the reference's vector-Jacobian product over every tensor
of the calls so far, so a gradient reaches every earlier call's arguments (the keys and values of each append).

If the check passes so, its loss is carried to the functions and classes that stood in and were called in the complete
runs (``Outcome.builds_on``; the attention answered, its own steps are not called):
scoring keeps its points where each of them loses points of its own (autograder/scoring.py). Which may stand
in is decided once, here, for every function (``candidates``): those that f calls in the reference (read from its
source, assignment/composition.py) or that the student's f entered (a class: one of its methods ran), each defined
before f, each failing a check of its own earlier in this grading, and each a function or a class the grader can answer
for (``_replayable``: not a torch module, whose answers rest on the weights loaded into it).

A timed call is timed on the student's code as it is; its answers, where the check
reads them, are the substituted call's on the same inputs (``Substituted.timed``); a memory check's memory is measured
on the student's code as it is, its answer the substituted call's (``Substituted(measured=True)``).
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Sequence

import torch

from autograder.assignment.composition import calls
from autograder.checks.student import FUNCTIONS, Student, StudentFault
from autograder.sandbox.protocol import MEMORY_FIELDS, Reply, RequestRefused
from autograder.sandbox.student_side.recording import READ
from reference import attention as ref

ROUNDS = 16  # calls of one substituted call at most: the reference's attention needs 6 forward, 11 with gradients
CALLS = calls(inspect.getsource(ref))  # each function of the reference -> the functions of it that it calls
# what a question from the worker may hold before the reference answers it on the grader's side
MAX_ELEMENTS = 1 << 22  # per tensor
MAX_INTEGER = 1 << 12  # per size given as a number (a causal mask of T_q x T_k)
MAX_NAME = 100  # per name given as an argument (a class's question: its methods)
MAX_STEPS = 256  # calls of one object a question about a class replays (a token at a time: 2 a position decoded)


def _replayable(value) -> bool:
    """A function, or a class whose objects' answers are a function of their constructor's arguments and the calls
    made on them (replayed: ``_replayed``). Not a torch module: its answers rest on the weights loaded into it, in
    place, as much as on its calls."""
    if inspect.isfunction(value):
        return True
    return inspect.isclass(value) and not issubclass(value, torch.nn.Module)


def candidates(function: str, failing: set[str], entered: set[str]) -> tuple[str, ...]:
    """The functions and classes that may stand in for a failed check of ``function``: called by it in the reference
    or entered by the student's (a class: one of its methods), defined before it, each failing a check of its own
    (``failing``), and each one the grader can answer for (``_replayable``)."""
    if function not in FUNCTIONS:
        return ()
    before = FUNCTIONS[: FUNCTIONS.index(function)]
    return tuple(
        name
        for name in before
        if name in failing and (name in CALLS.get(function, ()) or name in entered) and _replayable(getattr(ref, name))
    )


def _plain(value) -> bool:
    """A question's argument the reference may be given: a tensor of bounded size, a small number, a flag, None, or a
    short name (a class's question names its methods)."""
    if isinstance(value, torch.Tensor):
        return value.numel() <= MAX_ELEMENTS
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return abs(value) <= MAX_INTEGER
    if isinstance(value, str):
        return len(value) <= MAX_NAME
    return isinstance(value, float)


def _result(value) -> bool:
    """What the reference's object may give back as an answer: a tensor, a number, a flag, None, or a tuple or list of
    those; never an object of the reference (its methods, itself), which would carry its code to the worker."""
    if isinstance(value, (tuple, list)):
        return all(_result(item) for item in value)
    return value is None or isinstance(value, (torch.Tensor, bool, int, float))


def _differentiable(args: list) -> list[int]:
    return [i for i, arg in enumerate(args) if isinstance(arg, torch.Tensor) and arg.is_floating_point()]


class Refused(Exception):
    """The reference does not take a question's arguments (what the student's code passed the function standing in):
    that question gets no answer. Only the reference's own work on the student's arguments is refused so; an error of
    the grader's code around it is the grader's error (plugin.SubstitutionError), never "no answer"."""


@contextlib.contextmanager
def _refusing(name: str):
    """The reference's work on a question's arguments: whatever it raises there is its refusal of them (``Refused``)."""
    try:
        yield
    except Exception as error:  # noqa: BLE001 - the reference's own refusal of what the student's code passed it
        raise Refused(
            f"the reference's {name} does not take these arguments: {type(error).__name__}: {error}"
        ) from error


def _bound(name: str, function, args: list) -> tuple[list, dict]:
    """``args``, as the student's signature bound them, in its order, given to ``function``'s parameter in the same
    place, by name where that one is keyword-only (``device``)."""
    parameters = list(inspect.signature(function).parameters.values())
    if len(args) > len(parameters):
        raise Refused(f"{name} takes {len(parameters)} arguments, was asked about {len(args)}")
    positional = [arg for arg, p in zip(args, parameters) if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    keywords = {p.name: arg for arg, p in zip(args, parameters) if p.kind is inspect.Parameter.KEYWORD_ONLY}
    return positional, keywords


def _called(name: str, args: list):
    """The reference's ``name`` on ``args``, the arguments as the student's signature bound them, in its order; for a
    class, the last call of the question ``args`` describes (``_replayed``)."""
    if inspect.isclass(getattr(ref, name)):
        return _replayed(name, args)
    positional, keywords = _bound(name, getattr(ref, name), args)
    with _refusing(name):
        return getattr(ref, name)(*positional, **keywords)


def _steps(name: str, args: list) -> tuple[list, list[tuple[str, list]]]:
    """A class's question read: ``[n, *constructor's arguments, method, m, *its arguments, ...]`` (the worker's
    stand-in: recording._stand_in_class) -> (the constructor's arguments, [(method, its arguments)]). Refused where it
    does not read so, where it holds more than ``MAX_STEPS`` calls or ``MAX_ELEMENTS`` elements in all, or where a
    method is not one the reference's class defines (or a read of an attribute not public), before any of it runs."""
    cls = getattr(ref, name)
    if sum(arg.numel() for arg in args if isinstance(arg, torch.Tensor)) > MAX_ELEMENTS:
        raise Refused(f"the calls of {name} hold more than {MAX_ELEMENTS} elements")
    position, parts = 0, []
    while position < len(args):
        count = args[position]
        if type(count) is not int or not 0 <= count <= len(args) - position - 1:
            raise Refused(f"a question about {name} that does not read as calls")
        parts.append(args[position + 1 : position + 1 + count])
        position += 1 + count
        if position < len(args):  # the next call's method name
            parts.append(args[position])
            position += 1
    init, rest = parts[0] if parts else None, parts[1:]
    if init is None or len(rest) % 2 or not rest or len(rest) // 2 > MAX_STEPS:
        raise Refused(f"a question about {name} that is not a constructor and 1 to {MAX_STEPS} calls")
    steps = list(zip(rest[0::2], rest[1::2]))
    for method, given in steps:
        if method == READ:
            if not (len(given) == 1 and isinstance(given[0], str) and given[0].isidentifier()):
                raise Refused(f"a read of {name}'s attributes that does not name one")
            if given[0].startswith("_"):
                raise Refused(f"{name}'s attribute {given[0]} is not public")
        elif not (isinstance(method, str) and method in _methods(cls)):
            raise Refused(f"the reference's {name} has no method {method!r}")
    return init, steps


def _methods(cls) -> set[str]:
    """The methods the reference's class defines, its own bases' included (``object``'s not): what a question may
    call."""
    return {
        attr
        for klass in cls.__mro__[:-1]
        for attr, value in vars(klass).items()
        if inspect.isfunction(value) and attr not in ("__init__", "__new__", "__del__")
    }


def _replayed(name: str, args: list):
    """The answer to a question about the reference's class ``name``: an object of it made with the question's
    constructor's arguments, its calls made on it in turn; the last call's result. The object stays on this side;
    only a plain result (``_result``) is an answer."""
    init, steps = _steps(name, args)
    cls = getattr(ref, name)
    positional, keywords = _bound(name, cls, init)
    value = None
    with _refusing(name):
        thing = cls(*positional, **keywords)
        for method, given in steps:
            if method == READ:
                value = getattr(thing, given[0])
                continue
            positional, keywords = _bound(f"{name}.{method}", getattr(thing, method), given)
            value = getattr(thing, method)(*positional, **keywords)
    if not _result(value):
        raise Refused(f"the reference's {name} answers with a {type(value).__name__}, not a plain result")
    return value


def _value(name: str, args: list):
    with torch.no_grad():
        value = _called(name, args)
    return list(value) if isinstance(value, tuple) else value


def _vjp(name: str, args: list, upstream: list) -> list:
    """The reference's vector-Jacobian product of ``name`` at ``args``: the gradients of its floating-point tensor
    arguments, given its results' gradients ``upstream``."""
    positions = _differentiable(args)
    full = list(args)
    inputs = []
    for index in positions:
        full[index] = args[index].detach().clone().requires_grad_(True)
        inputs.append(full[index])
    with torch.enable_grad():
        value = _called(name, full)
        outputs = list(value) if isinstance(value, (tuple, list)) else [value]
        pairs = [(o, g) for o, g in zip(outputs, upstream) if isinstance(o, torch.Tensor) and o.requires_grad]
        with _refusing(name):  # upstream gradients that do not fit the reference's results: no answer
            grads = torch.autograd.grad(
                [o for o, _ in pairs], inputs, [g.to(o.dtype) for o, g in pairs], allow_unused=True
            )
    return [torch.zeros_like(x) if g is None else g for x, g in zip(inputs, grads)]


def answer(asked: list[dict], table: dict) -> int:
    """The reference's answers to the worker's questions, added to ``table``; how many were added. A question about
    a function that is not standing in, or with arguments the reference is not given (``_plain``), or on which the
    reference raises (``Refused``), gets no answer; anything else that fails here is the grader's own error, raised."""
    added = 0
    for question in asked:
        name, args, upstream = question["name"], question["args"], question.get("upstream")
        if name not in table or not all(_plain(arg) for arg in [*args, *(upstream or [])]):
            continue
        try:
            if upstream is None:
                table[name]["calls"].append({"args": args, "value": _value(name, args)})
            else:
                table[name]["vjps"].append({"args": args, "upstream": upstream, "grads": _vjp(name, args, upstream)})
        except Refused:  # the reference does not take what the student's code gave it: no answer
            continue
        added += 1
    return added


def _flat(table: dict) -> dict:
    """The table as the worker takes it, flat so as to stay within the wire's nesting (serving's ``_call``)."""
    return {
        "names": list(table),
        "calls": [[name, case["args"], case["value"]] for name, cases in table.items() for case in cases["calls"]],
        "vjps": [
            [name, case["args"], case["upstream"], case["grads"]]
            for name, cases in table.items()
            for case in cases["vjps"]
        ],
    }


class Substituted(Student):
    """The student's module with ``standing_in`` answered by the reference in every call (see the module's text).
    ``answered`` gathers the functions that stood in, and were called, in a complete run (one that asked nothing
    more): what the check, if it now passes, builds on (the attention answered, its own steps are not called)."""

    def __init__(self, student: Student, standing_in: tuple[str, ...], measured: bool = False) -> None:
        super().__init__(student._sandbox, student._timeout)
        self.ops = student.ops  # what the student's code ran in these calls is the integrity checks' evidence too
        self.standing_in = standing_in
        self.measured = measured  # a memory check: each call's memory measured on the student's code as it is
        self.answered: set[str] = set()

    def _call(self, target: str, args: tuple, kwargs: dict, **options) -> Reply:
        reply = self._substituted(target, args, kwargs, options)
        if self.measured:  # the memory the student's own code takes, on the same inputs; the answer is the above's
            plain = self._sandbox.call(target, args, kwargs, timeout=self._timeout, **options)
            for name in MEMORY_FIELDS:
                setattr(reply, name, getattr(plain, name))
        return reply

    def _substituted(self, target: str, args: tuple, kwargs: dict, options: dict) -> Reply:
        table: dict = {name: {"calls": [], "vjps": []} for name in self.standing_in}
        for _ in range(ROUNDS):
            try:
                reply = self._sandbox.call(
                    target, args, kwargs, timeout=self._timeout, substitute=_flat(table), **options
                )
            except RequestRefused as refused:
                if not any(cases["calls"] or cases["vjps"] for cases in table.values()):
                    raise  # the grader's own request, before the student's code asked anything: the grader's error
                # the answers to the student's own questions are more than the wire carries: a declared bound the
                # student's code crossed (a call of g per row, say), so the rerun cannot be made: no evidence
                raise StudentFault(
                    f"{target}: its calls of {', '.join(self.standing_in)} asked more than can be answered ({refused})"
                ) from None
            self.ops[target].update(reply.ops)  # every round's: the integrity checks read what the student's code ran
            if not reply.ok or not reply.asked:  # complete: the functions answered in it are what it built on
                self.answered |= set(reply.entered) & set(table)
                return self._read(target, args, reply, options)
            cpu = time.process_time()
            try:
                added = answer(reply.asked, table)
            finally:  # the reference's work on the student's questions is the student's time (Runner.charge)
                self._sandbox.charge(time.process_time() - cpu)
            if not added:
                break
        raise StudentFault(f"{target}: its calls of {', '.join(self.standing_in)} could not all be answered")

    def timed(self, target, inputs, outputs, device="cpu", kwargs=None) -> Reply:
        """Timed on the student's code as it is; each repetition's answers, where the check reads them, are the
        substituted call's on the same inputs."""
        reply = super().timed(target, inputs, outputs, device=device, kwargs=kwargs)
        reply.outputs = _Answers(self, target, inputs, kwargs or {})
        return reply


class _Answers(Sequence):
    """Each repetition's results, computed when read: the substituted call on that repetition's inputs."""

    def __init__(self, student: Substituted, target: str, inputs: list[list], kwargs: dict) -> None:
        self.student, self.target, self.inputs, self.kwargs = student, target, inputs, kwargs

    def __len__(self) -> int:
        return len(self.inputs)

    def __getitem__(self, index):
        args = [a.cpu() if isinstance(a, torch.Tensor) else a for a in self.inputs[index]]
        value = self.student.run(self.target, *args, **self.kwargs).value
        return list(value) if isinstance(value, (tuple, list)) else [value]
