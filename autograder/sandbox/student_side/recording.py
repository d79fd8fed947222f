"""Recording, in a worker's child, what the student's code did during a call: evidence, never a grade.

The fused-attention ops it ran and the library functions written in Python that compute attention it reached
(``_recorder``: a torch function mode and a dispatch mode, on every thread the submission starts: ``_record_threads``),
and which of the submission's own functions and classes the call entered (``_entered``),
for the hint "it builds on X". Runs beside student code: the standard library and torch only
(student_side/__init__.py).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import types

if __package__:  # the grader's side: the project's tests call these in their own process
    from .blocking import FORBIDDEN, NotAvailable
else:  # beside the student: the worker's library folder holds this folder's modules as top-level ones
    from blocking import FORBIDDEN, NotAvailable


# A library function whose name says it computes attention (torch.onnx.ops' ``attention_23``, flex attention's
# ``math_attention``, ``multi_head_attention_forward``, ...), and how many frames below a torch call are looked at
ATTENTION_WORDS = ("attention", "sdpa")
_CALLER_FRAMES = 8


def _library_attention(frame) -> str | None:
    """The library function that computes attention among the callers of a torch function (``frame`` and up): each
    frame until the submission's own (its file, or a notebook cell's: named attention.py), as ``module.qualname``."""
    for _ in range(_CALLER_FRAMES):
        if frame is None:
            return None
        code = frame.f_code
        if os.path.basename(code.co_filename) == "attention.py":
            return None  # the submission's own functions are its own work
        name = getattr(code, "co_qualname", code.co_name)  # co_qualname: Python 3.11
        if any(word in name.lower() for word in ATTENTION_WORDS):
            return f"{frame.f_globals.get('__name__', '?')}.{name}"
        frame = frame.f_back
    return None


def _recorder(seen: set | None = None, memory: _Memory | None = None):
    """Context managers that note every fused-attention op the student's code runs (in ``seen``), and every library
    function written in Python that computes attention which called a torch function (torch's own attention is
    attention, fused or not): torch's own is refused (``NotAvailable``), as the fused kernels are by the block.
    ``memory`` sees every op's results too (the largest tensor a call made: words for a message)."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = set() if seen is None else seen

    def note(name: str) -> None:
        if any(word in name.lower() for word in FORBIDDEN):
            seen.add(name)

    class Functions(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            note(getattr(func, "__name__", str(func)))
            if (library := _library_attention(sys._getframe(1))) is not None:
                seen.add(library)
            if library is not None and library.startswith("torch."):  # refused as the fused kernels are
                raise NotAvailable(
                    f"{library} is torch's own attention, written in Python: it is not available in this assignment;"
                    " build attention from the functions above"
                )
            return func(*args, **(kwargs or {}))

    class Ops(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            """Not wrapped in ``torch._dynamo.disable``: that wrapper imports dynamo, inductor and sympy on the first
            call (3 CPU-s a cold grading), and nothing here compiles (the code guard refuses code built at run time)."""
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            note(str(func))
            result = func(*args, **(kwargs or {}))
            if memory is not None:
                memory.note(func, result)
            return result

    return seen, Functions(), Ops()


_THREAD_OPS: set = set()  # fused ops seen in threads the submission started, reported with the next call


def _record_threads() -> None:
    """The op record is per thread: every thread the submission starts (threading) runs under one too."""
    import threading

    if getattr(threading.Thread.run, "_recorded", False):
        return
    run = threading.Thread.run

    def recorded(self):
        _, functions, ops = _recorder(_THREAD_OPS)
        with functions, ops:
            run(self)

    recorded._recorded = True
    threading.Thread.run = recorded


def _recording(name: str, function, entered: set[str]):
    """``function``, adding ``name`` to ``entered`` when called; its name, docstring and signature are the function's,
    so code that looks at itself sees its own function (a notebook's attack listed its functions by ``__name__``)."""

    @functools.wraps(function)
    def entering(*args, **kwargs):
        entered.add(name)
        return function(*args, **kwargs)

    return entering


def _same_arguments(given: list, expected: list) -> bool:
    """``given`` are the arguments ``expected`` holds, tensors within a tolerance of float32 rounding (float16's below
    it: the student's own earlier steps computed them), the rest equal."""
    import torch

    if len(given) != len(expected):
        return False
    for got, want in zip(given, expected):
        if isinstance(want, torch.Tensor):
            if not (isinstance(got, torch.Tensor) and got.shape == want.shape and got.dtype == want.dtype):
                return False
            if torch.equal(got.detach(), want):  # the same bits: a run repeats the one that asked the question
                continue
            loose = want.dtype in (torch.float16, torch.bfloat16)
            tolerance = 2e-2 if loose else 1e-4
            if not torch.allclose(got.detach(), want, rtol=tolerance, atol=tolerance, equal_nan=True):
                return False
        elif isinstance(got, torch.Tensor) or got != want:
            return False
    return True


def _given(signature, args, kwargs) -> list | None:
    """A call's arguments as the student's own signature binds them, defaults applied, in its order; a device is
    given as None (the wire carries none, and the grader answers on the CPU). None where they do not bind."""
    import torch

    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    return [None if isinstance(value, torch.device) else value for value in bound.arguments.values()]


def _differentiable(given: list) -> list[int]:
    """The positions of a call's floating-point tensor arguments: those the grader's vector-Jacobian product is for."""
    import torch

    return [i for i, arg in enumerate(given) if isinstance(arg, torch.Tensor) and arg.is_floating_point()]


def _detached(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (tuple, list)):
        return [_detached(item) for item in value]
    return value


class _Table:
    """The grader's answers for the functions standing in during one call (serving's ``substitute``): per function,
    its calls (``{"args": [...], "value": ...}``) and its vector-Jacobian products (``{"args", "upstream", "grads"}``),
    each the reference's, computed on the grader's side on arguments this worker asked about before. A call or a
    backward with arguments it holds no answer for is noted in ``asked`` (once) and done by the student's own
    function (a backward: zeros): the grader answers what was asked and runs the call again, until nothing is asked.
    Only results cross, never the reference's code."""

    def __init__(self, cases: dict) -> None:
        self.cases = cases
        self.asked: list[dict] = []
        self.next: dict = {}  # per function and kind, the case after the last found: where a call is looked for first

    def _find(self, name: str, kind: str, match) -> dict | None:
        """The first case of ``name``'s ``kind`` that ``match`` takes, starting after the last one found (a run calls a
        function in the order the grader's answers were asked for: one comparison per call, not one per case)."""
        cases = self.cases[name].get(kind, [])
        start = self.next.get((name, kind), 0)
        for offset in range(len(cases)):
            index = (start + offset) % len(cases)
            if match(cases[index]):
                self.next[(name, kind)] = index + 1
                return cases[index]
        return None

    def value(self, name: str, given: list):
        case = self._find(name, "calls", lambda case: _same_arguments(given, case["args"]))
        if case is not None:
            return True, case["value"]
        self._ask({"name": name, "args": _detached(given)})
        return False, None

    def vjp(self, name: str, given: list, upstream: list) -> list | None:
        case = self._find(
            name,
            "vjps",
            lambda case: _same_arguments(given, case["args"]) and _same_arguments(upstream, case["upstream"]),
        )
        if case is not None:
            return case["grads"]
        self._ask({"name": name, "args": _detached(given), "upstream": _detached(upstream)})
        return None

    def _ask(self, question: dict) -> None:
        """A question noted (asked twice in one run, it is answered twice: comparing each with every other would cost
        more than the answer)."""
        self.asked.append(question)


def _copy(value):
    if isinstance(value, (tuple, list)):
        return type(value)(_copy(item) for item in value)
    return value.clone() if hasattr(value, "clone") else value


def _answered_class(name: str, table: _Table):
    """An autograd function that returns the grader's answer to one call of ``name`` (its ``value``), with the
    reference's vector-Jacobian product, asked of the table, as its backward: gradients for the call's floating-point
    tensor arguments (``tensors``), each a tensor the student's code passed."""
    import torch

    class Answered(torch.autograd.Function):
        @staticmethod
        def forward(ctx, given, value, *tensors):
            ctx.given = given
            ctx.count = len(tensors)
            if isinstance(value, (tuple, list)):
                return tuple(_copy(item) for item in value)
            return _copy(value)

        @staticmethod
        def backward(ctx, *upstream):
            grads = table.vjp(name, ctx.given, list(upstream))
            if grads is None or len(grads) != ctx.count:
                grads = [None] * ctx.count
            return (None, None, *grads)

    return Answered


def _answer(Answered, given: list, value):
    """The grader's ``value`` for a call on ``given``: through autograd (``Answered``) where one of its floating-point
    tensor arguments requires a gradient, else a copy."""
    import torch

    tensors = [given[i] for i in _differentiable(given)]
    holds = isinstance(value, torch.Tensor) or (
        isinstance(value, (tuple, list)) and any(isinstance(item, torch.Tensor) for item in value)
    )  # a number (len()) has no gradient
    if holds and torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return Answered.apply([_detached(g) for g in given], value, *tensors)
    return tuple(_copy(item) for item in value) if isinstance(value, (tuple, list)) else _copy(value)


def _stand_in(name: str, function, table: _Table, entered: set[str]):
    """``function`` answered, for one call, by the grader's table (``_Table``): on arguments the table holds (bound as
    the student's own signature binds them) it returns the reference's result, through autograd with the reference's
    vector-Jacobian product as its backward; on any other it notes the question and runs the student's own. The
    grader asks this to see whether the student's caller passes a check once ``name`` is right ("correct once X is
    fixed")."""
    import inspect

    signature = inspect.signature(function)
    Answered = _answered_class(name, table)

    @functools.wraps(function)
    def standing_in(*args, **kwargs):
        entered.add(name)
        given = _given(signature, args, kwargs)
        if given is None:
            return function(*args, **kwargs)
        found, value = table.value(name, given)
        if not found:
            return function(*args, **kwargs)
        return _answer(Answered, given, value)

    return standing_in


# Names a class's stand-in never takes from the student's class: how an object is made, looked up and set
_NOT_STANDING_IN = frozenset(
    {"__init__", "__new__", "__del__", "__getattr__", "__getattribute__", "__setattr__", "__delattr__"}
    | {"__init_subclass__", "__class_getitem__", "__subclasshook__", "__set_name__", "__reduce__", "__reduce_ex__"}
)
READ = "__getattribute__"  # a question's step that reads a public attribute of the object (its one argument: the name)


def _methods(cls) -> dict:
    """The plain functions the student's class and its own bases define (``object``'s not), each by name, the
    nearest first: what its objects answer, dunders included (``len(cache)``)."""
    found: dict = {}
    for klass in cls.__mro__[:-1]:
        for attr, value in vars(klass).items():
            if isinstance(value, types.FunctionType) and attr not in found and attr not in _NOT_STANDING_IN:
                found[attr] = value
    return found


def _called_on(thing, method: str, args: tuple, kwargs: dict):
    """One step of a question on an object: a call of its ``method``, or a read of an attribute (``READ``)."""
    return getattr(thing, args[0]) if method == READ else getattr(thing, method)(*args, **kwargs)


def _stand_in_class(name: str, cls, table: _Table, entered: set[str]):
    """A class that stands in for the student's ``cls`` during one call: each method the student's class has (its
    dunders too) is answered by the grader's table. An object's answers are a function of its constructor's arguments
    and the calls made on it so far, so the question of one call is all of them, flat: ``[n, *constructor's
    arguments, method, m, *its arguments, ..., this method, k, *its arguments]`` (each bound as the student's own
    signature binds it; a read of a public attribute the object does not hold is the step ``READ``, its one argument
    the name). The grader answers it by making the reference's class with those arguments and replaying the calls
    (checks/substitution.py). A call the table cannot answer is noted and answered by the student's own object, made
    and brought to the same point then (every later call goes to it too), so that one run asks what it can."""
    import inspect

    made = inspect.signature(cls)
    methods = _methods(cls)
    Answered = _answered_class(name, table)

    def flat(init: list, steps: list) -> list:
        question = [len(init), *init]
        for method, given in steps:
            question += [method, len(given), *given]
        return question

    def step(self, method: str, args: tuple, kwargs: dict, signature):
        state = object.__getattribute__(self, "_standing_in")
        entered.add(name)
        given = [args[0]] if signature is None else _given(signature, args, kwargs)
        if given is None:  # the student's own method would not bind them either: its own error, from its own object
            return _called_on(own(state), method, args, kwargs)
        state["steps"].append((method, given))
        state["calls"].append((method, args, kwargs))
        question = flat(state["init"], state["steps"])
        found, value = table.value(name, question)
        if state["own"] is not None or not found:  # the student's own object kept at the same point
            mine = _called_on(own(state, replayed=len(state["calls"]) - 1), method, args, kwargs)
            if not found:
                return mine
        return _answer(Answered, question, value)

    def own(state: dict, replayed: int | None = None):
        """The student's own object, made with the same arguments, with the calls before this one replayed on it."""
        if state["own"] is None:
            state["own"] = cls(*state["made"][0], **state["made"][1])
            for method, args, kwargs in state["calls"][:replayed]:
                _called_on(state["own"], method, args, kwargs)
        return state["own"]

    def method_of(method: str, function):
        signature = inspect.signature(function)
        parameters = list(signature.parameters.values())[1:]  # less self
        unbound = signature.replace(parameters=parameters)

        @functools.wraps(function)
        def answered(self, *args, **kwargs):
            return step(self, method, args, kwargs, unbound)

        return answered

    def __init__(self, *args, **kwargs):
        entered.add(name)
        init = _given(made, args, kwargs)
        if init is None:  # arguments the student's own class does not take: its own error
            cls(*args, **kwargs)
            raise TypeError(f"{name}() does not take these arguments")
        state = {"init": init, "made": (args, kwargs), "steps": [], "calls": [], "own": None}
        object.__setattr__(self, "_standing_in", state)

    def __getattr__(self, attribute: str):
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        return step(self, READ, (attribute,), {}, None)

    namespace = {attr: method_of(attr, function) for attr, function in methods.items()}
    namespace.update({"__init__": __init__, "__getattr__": __getattr__, "__doc__": cls.__doc__})
    namespace["__module__"] = cls.__module__
    return type(cls.__name__, (), namespace)


def _own_class(value) -> bool:
    """A class the submission defines: one of its own methods was compiled from the submission's file (attention.py,
    or a notebook's cell, "cellN/attention.py"), not an imported one (torch's ``Tensor``, ``nn.Module``)."""
    return isinstance(value, type) and any(
        isinstance(method, types.FunctionType) and os.path.basename(method.__code__.co_filename) == "attention.py"
        for method in vars(value).values()
    )


def _spaces(module, name: str, value) -> list[dict]:
    """The namespaces the submission's code looks ``name`` up in, each holding ``value`` there: a function's globals
    (the module, or a notebook's globals); for a class, the module's own too (where the grader's requests find it)."""
    if isinstance(value, types.FunctionType):
        owners, found = [value], []
    else:
        owners, found = list(_methods(value).values()), [vars(module)] if vars(module).get(name) is value else []
    for owner in owners:
        space = getattr(owner, "__globals__", None)
        if isinstance(space, dict) and space.get(name) is value and all(space is not seen for seen in found):
            found.append(space)
    return found


def _recording_class(name: str, cls, entered: set[str]) -> list:
    """The methods the student's class itself defines, each wrapped in place for the block (``_recording``): entering
    one enters the class. Returns what to put back: (class, attribute, method, wrapper)."""
    patched = []
    for attr, function in list(vars(cls).items()):
        if isinstance(function, types.FunctionType) and attr not in ("__new__", "__init_subclass__"):
            wrapper = _recording(name, function, entered)
            try:
                setattr(cls, attr, wrapper)
            except (AttributeError, TypeError):  # a class that refuses it: not recorded
                continue
            patched.append((cls, attr, function, wrapper))
    return patched


@contextlib.contextmanager
def _entered(module, table: _Table | None = None):
    """The names of the module's own functions and classes that the block calls by their global names (the name each
    one was defined with), a class when one of its own methods is entered. Each function is wrapped, for the block
    only, in the namespace its callers look it up in (``__globals__``: the module, or a notebook's globals); each
    class's methods in the class. Evidence for a hint ("it builds on X"), never for a grade. ``table`` holds the
    grader's answers for the functions and classes it names: each of them stands in for the block with those answers
    (``_stand_in``, ``_stand_in_class``: a class replaced by its stand-in where it is looked up)."""
    entered: set[str] = set()
    patched, methods = [], []
    substitute = table.cases if table is not None else {}
    for name, value in list(vars(module).items()):
        if _own_class(value) and name in substitute:
            entering = _stand_in_class(name, value, table, entered)
        elif _own_class(value):
            if name == value.__name__:  # by the name it was defined with: an alias's methods are the same methods
                methods += _recording_class(name, value, entered)
            continue
        elif not isinstance(value, types.FunctionType):
            continue
        elif name in substitute:
            entering = _stand_in(name, value, table, entered)
        else:
            entering = _recording(name, value, entered)
        for space in _spaces(module, name, value):
            space[name] = entering
            patched.append((space, name, value, entering))
    try:
        yield entered
    finally:
        for space, name, value, entering in patched:
            if space.get(name) is entering:  # what the student's code put there itself stays
                space[name] = value
        for cls, attr, function, wrapper in reversed(methods):
            if vars(cls).get(attr) is wrapper:
                setattr(cls, attr, function)


class _Memory:
    """The largest new floating-point storage a call's ops made: its elements, the shape of the tensor that made it and
    the op. Wording for the memory check's message ("its largest tensor: ..."), never its verdict: the verdict is the
    grader's own measure of the whole process (sandbox/memory.py), which no thread, library or dtype escapes.

    Noted on every call alike (a call the grader measures looks like any other), with no reference to the tensors it
    sees (nothing the student's code could find on them). The call's inputs' storages never count; boolean and integer
    tensors are not counted (a caller may hand in a full (T_q, T_k) mask)."""

    def __init__(self, inputs) -> None:
        import torch

        self.given = {t.untyped_storage().data_ptr() for t in inputs if isinstance(t, torch.Tensor)}
        self.largest = 0
        self.shape: list[int] = []
        self.op = ""

    def note(self, func, result) -> None:
        import torch

        for tensor in result if isinstance(result, (tuple, list)) else (result,):
            if not isinstance(tensor, torch.Tensor) or not (tensor.is_floating_point() or tensor.is_complex()):
                continue
            storage = tensor.untyped_storage()
            if storage.data_ptr() == 0 or storage.data_ptr() in self.given:
                continue
            elements = storage.nbytes() // tensor.element_size()
            if elements > self.largest:
                self.largest, self.shape, self.op = elements, list(tensor.shape), str(func)

    def answer(self) -> dict:
        return {"largest": self.largest, "shape": self.shape, "op": self.op[:200]}


def _map_in_libraries() -> None:
    """Every page of the files this process has mapped (torch's libraries, Python's) put in its page tables now, before
    any student code runs (``madvise(MADV_POPULATE_READ)``, Linux 5.14). A forked child maps its parent's library pages
    only as it first touches them, and they count in its resident set from then on: without this, the first call that
    runs a kernel would seem to take the kernel's code (20 MiB and more) to the grader's measure of its memory."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    populate_read = 22
    try:
        with open("/proc/self/maps") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or not fields[5].startswith("/") or "r" not in fields[1]:
            continue
        start, end = (int(address, 16) for address in fields[0].split("-"))
        libc.madvise(start, end - start, populate_read)  # where the kernel lacks it: nothing done, said nowhere


def _settle() -> None:
    """After a request, before its answer: the cyclic garbage of what ran collected, and every object alive now moved
    out of reach of later collections (``gc.freeze``). The grader counts the pages a call reads or writes
    (sandbox/memory.py); without this, a full collection that falls inside a call walks every object the process holds
    (torch's modules, tens of MiB: 16.8 MiB touched by an honest call instead of 10.4) and that call seems to have
    touched them all. Every load and call alike: nothing tells a measured call from another (a timed run, whose
    memory nothing measures, answers without it: its clock stops at the answer). An object frozen here that later
    becomes cyclic garbage is not collected: the submission's own memory, under its cap."""
    import gc

    gc.collect()
    gc.freeze()


def _keep_freed() -> None:
    """glibc set to keep the memory a call frees for the call's next allocations, until the call ends
    (``_give_back``): no heap trimmed while a call runs, and blocks up to 32 MiB (glibc's most) taken from the heap,
    not mapped and unmapped each time. The grader counts the pages the kernel charges the sandbox and takes back while
    a call runs (sandbox/memory.py); without this, an honest call that frees and takes its blocks again would be
    charged for each block anew (the chunked port: up to 23 MiB in one call, above half the matrix). Set once, before
    any student code runs."""
    import ctypes

    trim_threshold, mmap_threshold = -1, -3  # mallopt's M_TRIM_THRESHOLD and M_MMAP_THRESHOLD (malloc.h)
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(trim_threshold, 1 << 30)
        libc.mallopt(mmap_threshold, 32 << 20)
    except (OSError, AttributeError):  # not glibc
        pass


def _give_back() -> None:
    """Memory the call freed handed back to the kernel (``malloc_trim``): glibc keeps freed memory for reuse, and the
    grader's measure of the next call (the rise of the process's resident set) must start from what the process
    holds, not from what an earlier call left in the allocator's pools."""
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to hand back this way
        pass
