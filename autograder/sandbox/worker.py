"""The worker: the only process that imports the student's code.

Started by the grader as ``python -I -S worker.py LIBDIR FD [USER]`` with a minimal environment;
LIBDIR holds links to torch and its dependencies and copies of the sandbox's own modules (wire.py,
confine.py, landlock.py, seccomp.py), nothing else. It imports torch once (the "zygote"), then, for
every request on its control socket, forks a child that confines itself (confine.py), loads the
submission and serves calls on a socket of its own.
Children never see the grader's packages, the reference, the config or the results file:
only plain tensors and plain data cross the sockets (see wire.py).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import socket
import sys
import traceback
import types

FORBIDDEN = (
    "scaled_dot_product",
    "multi_head_attention",
    "flash_attention",
    "efficient_attention",
    "multiheadattention",
)


class _CappedStream:
    """A text stream that keeps at most ``limit`` characters and drops the rest."""

    def __init__(self, stream, limit: int) -> None:
        self.stream, self.left = stream, limit

    def write(self, text) -> int:
        text = str(text)
        if self.left > 0:
            kept = text[: self.left]
            self.left -= len(kept)
            try:
                self.stream.write(kept)
                self.stream.flush()
            except OSError:
                self.left = 0
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _error(exc: BaseException) -> dict:
    """What the grader learns of a student's exception: type, message, and the student's own frames."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith("attention.py")]
    where = f" (attention.py, line {frames[-1].lineno})" if frames else ""
    return {"ok": False, "error": type(exc).__name__, "message": f"{str(exc)[:500]}{where}"}


def _recorder(seen: set | None = None):
    """Context managers that note every fused-attention op the student's code runs (in ``seen``)."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = set() if seen is None else seen

    def note(name: str) -> None:
        if any(word in name.lower() for word in FORBIDDEN):
            seen.add(name)

    class Functions(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            note(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    class Ops(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            """Not wrapped in ``torch._dynamo.disable``: that wrapper imports dynamo, inductor and sympy on the first
            call (3 CPU-s a cold grading), and nothing here compiles (the code guard refuses code built at run time)."""
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            note(str(func))
            return func(*args, **(kwargs or {}))

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


class NotAvailable(RuntimeError):
    """A fused attention entry point, called in the sandbox: the assignment is to build attention from its pieces."""


_FUSED_KERNELS: list[tuple[str, str]] = []  # (aten op.overload, dispatch key) with a kernel: found once, in the zygote
_REGISTERED = re.compile(r"^(\w+)(?:\[alias\])?: registered at", re.MULTILINE)


def _find_fused_kernels() -> None:
    """Every fused-attention op of aten and every dispatch key it has a kernel under (in the zygote, once): the
    dispatcher's own list (``_dispatch_dump``), so functorch's (FuncTorchBatched, FuncTorchBatchedDecomposition,
    FuncTorchVmapMode), autograd's, autocast's and Meta's are among them, with the backends' and the aliases'."""
    import torch

    for op in torch._C._dispatch_get_all_op_names():
        if op.startswith("aten::") and any(
            word in op.lower() for word in (*FORBIDDEN, "_fused_sdp", "cudnn_attention")
        ):
            for key in dict.fromkeys(_REGISTERED.findall(torch._C._dispatch_dump(op))):
                try:
                    torch._C._dispatch_key_parse(key)
                except RuntimeError:  # a key this build cannot name from Python: none can register there either
                    continue
                _FUSED_KERNELS.append((op[6:], key))


def _refuse(name: str):
    def fused(*args, **kwargs):
        raise NotAvailable(f"{name} is not available in this assignment: build attention from the functions above")

    fused.__name__ = name
    return fused


def _block_fused() -> None:
    """Make PyTorch's fused attention unreachable in this child, before the submission loads.

    Every kernel of every fused-attention op, under every dispatch key the dispatcher has one for
    (functorch's batched and vmap keys, autograd, autocast and Meta included), is replaced by one that
    raises ``NotAvailable``: ``F.scaled_dot_product_attention``, ``torch._C._nn``'s binding, ``vars(F)[...]``,
    every ``torch.ops.aten._scaled_dot_product_*`` overload, ``torch.vmap`` over any of them, and calls from any
    thread (raw ``_thread`` ones too) all reach it. The registrations live in a C++ library object that
    nothing in Python refers to: no ``torch.library.Library``, no finalizer, no handle a Python object holds
    (one reference is leaked on purpose, so it is never destroyed and never restores the kernels).
    ``F.multi_head_attention_forward``, ``nn.MultiheadAttention.forward`` and the quantizable
    MultiheadAttention (which compute their weights in Python) are replaced too; the code guard (``_guard_code``)
    keeps their originals from being run again from torch's files. Native code that calls libtorch's symbols
    directly is out of reach of this; the guard refuses ctypes the loading of libtorch by name (docs/security.md)."""
    import ctypes
    import warnings

    import torch
    import torch.ao.nn.quantizable as quantizable
    import torch.nn.functional as F

    library = torch._C._dispatch_library("IMPL", "aten", "", "<the sandbox's fused-attention block>", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "overriding a previously registered kernel": that is the point
        for op, key in _FUSED_KERNELS:
            library.impl(op, key, _refuse(op.split(".")[0]), False)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(library))  # never destroyed, and no Python object refers to it
    del library
    F.multi_head_attention_forward = _refuse("multi_head_attention_forward")
    torch.nn.MultiheadAttention.forward = _refuse("nn.MultiheadAttention")
    quantizable.MultiheadAttention.forward = _refuse("quantizable MultiheadAttention")
    quantizable.MultiheadAttention._forward_impl = _refuse("quantizable MultiheadAttention")


# Audit events (PEP 578) that reach around the fused-kernel block or the grader's objects: every object the
# collector knows, code and functions made from parts. Refused in the student's process once the code guard is on,
# with ctypes loading a library by name (libtorch's, to call its kernels by their symbols).
_REFUSED_EVENTS = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents", "code.__new__",
                             "function.__new__", "marshal.load"})  # fmt: skip
_CODE_EVENTS = frozenset({"compile", "exec", "marshal.loads"})
# what ctypes may still load by name, besides the program's own symbols (None: libc's; libtorch's are not among
# them): NVML, which torch.cuda loads to count devices
_LIBRARIES = frozenset({"libnvidia-ml.so.1"})


def _code_constants(source: bytes, depth: int = 3) -> frozenset[bytes]:
    """The string constants of ``source``, and of the strings in it that are Python (``depth`` deep), as UTF-8:
    the code a submission gives as constants (a notebook's cells, ``exec("...")``), which the static scan reads."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    found: set[bytes] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                text = node.value.encode()
            except UnicodeEncodeError:
                continue
            found.add(text)
            if depth > 0 and node.value.strip():
                found |= _code_constants(text, depth - 1)
    return frozenset(found)


def _guard_code(path: str) -> None:
    """Before the submission runs: an audit hook (PEP 578, which nothing in Python can remove) refuses code built at
    run time and the ways around the fused-kernel block.

    Refused (``NotAvailable``): compiling source that is neither the submission's own (its file, and the strings
    in it: a notebook's cells) nor the bytes of a file on a read-only mount (an import of torch's or Python's
    modules); code or functions made from parts (``types.CodeType``, ``code.replace``, ``types.FunctionType``),
    ``marshal`` of anything but an import's cached bytecode, running a module that was already imported a second
    time (``importlib.reload``, a module loaded again from torch's file, which would bring back what
    ``_block_fused`` replaced), ``gc.get_objects`` / ``get_referrers`` / ``get_referents``, and ctypes loading a
    library by name (``CDLL(None)``, the program's own symbols, stays: libtorch's are not among them).
    ``collections.namedtuple`` keeps compiling its one line (its names are checked identifiers).
    The hook's state is immutable and bound at definition (no global or builtin is looked up when it runs), so
    replacing the worker's globals or builtins does not change what it refuses."""
    import collections
    import importlib._bootstrap_external as external

    with open(path, "rb") as handle:
        own = handle.read()
    allowed = _code_constants(own) | {own}
    loaded = frozenset(
        file for module in list(sys.modules.values()) if isinstance(file := getattr(module, "__file__", None), str)
    )
    # the devices the sandbox may write (its private tmpfs mounts); where there are none (a sandbox without a mount
    # namespace: the scratch folder on the same file system as Python's), files there cannot be told apart this way
    writable = _devices(os.getcwd(), "/tmp", "/dev/shm") - _devices(os.__file__, sys.modules["torch"].__file__)
    sys.addaudithook(_code_hook(allowed, loaded, writable, collections.namedtuple.__code__,
                                external._compile_bytecode.__code__))  # fmt: skip


def _devices(*paths: str) -> frozenset[int]:
    """The devices (file systems) the paths lie on, of those this process may look at."""
    found = set()
    for path in paths:
        try:
            found.add(os.stat(path).st_dev)
        except OSError:  # closed to this user (an unprivileged worker and a Python under /root), or absent
            pass
    return frozenset(found)


def _code_hook(
    allowed,
    loaded,
    writable,
    namedtuple,
    bytecode,
    refused=_REFUSED_EVENTS,
    code_events=_CODE_EVENTS,
    libraries=_LIBRARIES,
):
    """The hook itself. What it uses is bound here, immutable (frozensets, bytes, code objects, C functions; its
    frame, which a traceback shows, holds nothing else): no global or builtin is looked up when it runs."""

    def hook(
        event,
        args,
        frame=sys._getframe,
        error=NotAvailable,
        stat=os.stat,
        open=open,
        view=memoryview,
        bytes=bytes,
        type=type,
        str=str,
    ):
        if event in refused or (
            event == "ctypes.dlopen" and not (args[0] is None or (type(args[0]) is str and args[0] in libraries))
        ):  # a library by name: libtorch's, to reach its kernels by their symbols
            raise error(f"{event} is not available in this assignment: attention.py needs none of it")
        if event not in code_events:
            return
        name, content, skip = None, None, 0
        if event == "exec":
            if not (args[0].co_name == "<module>" and args[0].co_filename in loaded):
                return  # code that is not a module's own code, which ran once already
        else:
            try:
                content = bytes(view(args[0]))  # the bytes themselves, whatever object holds them
            except TypeError:  # compile() of a syntax tree built in Python
                pass
        if event == "compile" and content is not None:
            name = args[1]
            if content in allowed or frame(1).f_code == namedtuple:
                return
        elif event == "marshal.loads":  # an import's cached bytecode, checked against its file below
            caller, skip = frame(1), 16
            if caller.f_code == bytecode:
                name = caller.f_locals.get("bytecode_path")
        if type(name) is str and content is not None:  # the bytes of a file on a mount nothing here writes
            try:
                if stat(name).st_dev not in writable:
                    with open(name, "rb") as handle:
                        if handle.read()[skip:] == content:
                            return
            except (OSError, ValueError):
                pass
        raise error(
            "building code at run time (exec, eval, compile, an interpreter, a module run again) is not available"
            " in this assignment: write your functions out in attention.py"
        )

    return hook


class _Hidden:
    """A finder, first on ``sys.meta_path``: the library folder's modules outside what the submission may import and
    what those need are not installed, for whoever asks (the sandbox cannot read them either: readable.py)."""

    def __init__(self, hidden: frozenset[str]) -> None:
        self.hidden = hidden

    def find_spec(self, name: str, path=None, target=None):
        if path is None and name in self.hidden:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def _allow_imports(allowed: list[str], hidden: list[str], packages: list[str]) -> None:
    """Before the submission loads: an import statement in the submission's code (code whose module is neither the
    standard library's nor one of the library folder's ``packages``) of a module outside the standard library and
    ``allowed`` fails as the import of a missing module does (``ModuleNotFoundError``, which ``try: ... except
    ImportError`` catches), on every path alike, whatever the grading machine has installed. The packages' own imports
    are theirs. ``hidden``: the library folder's modules that are not there at all (``_Hidden``)."""
    import builtins

    permitted = frozenset(allowed) | sys.stdlib_module_names
    theirs = permitted | frozenset(packages) | {"__main__"}  # and this worker's own (it imports wire as it serves)
    sys.meta_path.insert(0, _Hidden(frozenset(hidden) - permitted))
    original = builtins.__import__

    def guarded(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name.partition(".")[0] not in permitted:
            importer = sys._getframe(1).f_globals.get("__name__")
            if str(importer).partition(".")[0] not in theirs:
                raise ModuleNotFoundError(f"No module named {name!r} (not allowed)", name=name)
        return original(name, globals, locals, fromlist, level)

    builtins.__import__ = guarded


def _preload(allowed: list[str]) -> None:
    """The allowed packages imported before the code guard (``_guard_code``) is set, as torch is: a package that
    builds code while it imports (dataclasses, for one) would otherwise be refused at the student's ``import``.
    One that cannot be imported here fails again, as it would, when the submission imports it."""
    import importlib

    for name in allowed:
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the submission's own import reports it, in its own words
                pass


def _imported_modules(path: str, allowed: list[str]) -> list[str]:
    """The modules of allowed packages (torch aside, which the fused-kernel block has already seen) that the
    submission's own import statements name, as ``a.b`` and, for ``from a.b import c``, ``a.b.c`` too: a package's
    submodules (``matplotlib.pyplot``) are imported on demand and may build code as they do."""
    import ast

    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
        return []  # loading it says why, in the submission's own words
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*"]
    packages = set(allowed) - {"torch"}
    return list(dict.fromkeys(name for name in names if name.split(".")[0] in packages))


def _load(path: str, guard: bool = True, allowed: list[str] | None = None):
    import importlib.util

    _record_threads()
    if guard:
        _preload(_imported_modules(path, allowed or []))  # before the code guard, as the packages themselves were
        _guard_code(path)
    spec = importlib.util.spec_from_file_location("attention", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["attention"] = module
    spec.loader.exec_module(module)
    return module


def _recording(name: str, function, entered: set[str]):
    """``function``, adding ``name`` to ``entered`` when called; its name, docstring and signature are the function's,
    so code that looks at itself sees its own function (a notebook's attack listed its functions by ``__name__``)."""

    @functools.wraps(function)
    def entering(*args, **kwargs):
        entered.add(name)
        return function(*args, **kwargs)

    return entering


@contextlib.contextmanager
def _entered(module):
    """The names of the module's own functions that the block calls by their global names (the name each one
    was defined with). Each is wrapped, for the block only, in the namespace its callers look it up in
    (``__globals__``: the module, or a notebook's globals). Evidence for a hint ("it builds on X"),
    never for a grade."""
    entered: set[str] = set()
    patched = []
    for name, function in list(vars(module).items()):
        space = getattr(function, "__globals__", None) if isinstance(function, types.FunctionType) else None
        if space is not None and space.get(name) is function:
            entering = _recording(name, function, entered)
            space[name] = entering
            patched.append((space, name, function, entering))
    try:
        yield entered
    finally:
        for space, name, function, entering in patched:
            if space.get(name) is entering:  # what the student's code put there itself stays
                space[name] = function


def _flatten(value) -> list:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _flatten(item)]
    return []


def _instantiate(module, request: dict):
    """The student's MultiHeadAttention, built with the grader's sizes and loaded with the grader's weights."""
    import torch

    model = module.MultiHeadAttention(*request["init"])
    dtypes = {tensor.dtype for tensor in request["state"].values()}
    if not isinstance(model, torch.nn.Module):
        raise TypeError("MultiHeadAttention must be an nn.Module")
    model = model.to(dtypes.pop())  # the grader's weights and inputs are float64
    with torch.no_grad():
        for name, tensor in request["state"].items():
            layer_name, _, param = name.partition(".")
            layer = getattr(model, layer_name, None)
            if not isinstance(layer, torch.nn.Linear):
                raise AttributeError(f"MultiHeadAttention has no nn.Linear attribute named {layer_name}")
            target = getattr(layer, param, None)
            if target is None or target.shape != tensor.shape:
                found = None if target is None else tuple(target.shape)
                raise ValueError(f"{name} has shape {found}, expected {tuple(tensor.shape)}")
            target.copy_(tensor)
    return model


def _revive(value, arena=None):
    """Placeholders become objects: ``{"$generator": seed}`` a seeded torch.Generator;
    ``{"$shm": offset, "dtype", "shape"}`` a view of the grader's shared memory (see arena.py)."""
    import torch

    if isinstance(value, dict) and set(value) == {"$generator"}:
        return torch.Generator().manual_seed(int(value["$generator"]))
    if isinstance(value, dict) and "$shm" in value and arena is not None:
        dtype = getattr(torch, value["dtype"])
        count = torch.Size(value["shape"]).numel()
        if count == 0:
            return torch.empty(value["shape"], dtype=dtype)
        return torch.frombuffer(arena, dtype=dtype, count=count, offset=value["$shm"]).view(value["shape"])
    if isinstance(value, list):
        return [_revive(item, arena) for item in value]
    return value


def _attach(request: dict, conn):
    """The grader's shared memory named by the request, passed right after it on the socket."""
    import mmap

    if not request.get("arena"):
        return None
    _, fds, _, _ = socket.recv_fds(conn, 1, 1)
    if not fds:
        raise ConnectionError("the grader's shared memory did not arrive")
    try:
        return mmap.mmap(fds[0], request["arena"])
    finally:
        os.close(fds[0])


def _commit(value, slots: list) -> None:
    """Copy one timed call's results into the grader's output slots."""
    import torch

    values = value if isinstance(value, (tuple, list)) else (value,)
    if len(values) != len(slots):
        raise TypeError(f"returned {len(values)} value(s), expected {len(slots)}")
    for got, slot in zip(values, slots):
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(slot.shape) or got.dtype != slot.dtype:
            found = f"shape {tuple(got.shape)}, {got.dtype}" if isinstance(got, torch.Tensor) else type(got).__name__
            raise TypeError(f"returned {found}; expected shape {tuple(slot.shape)}, {slot.dtype}")
        slot.copy_(got.detach())


def _timed(module, request: dict, conn) -> dict:
    """Timing: every repetition gets inputs the grader writes into its shared memory only after it
    has read its clocks, and leaves its results there before the answer; the grader times the
    whole exchange from outside, with its own clock and the kernel's count of this process's CPU time."""
    import wire

    arena = _attach(request, conn)
    function = getattr(module, request["target"], None)
    if function is None:
        raise AttributeError(f"attention.py has no function named {request['target']}")
    inputs = [_revive(rep, arena) for rep in request["inputs"]]
    outputs = [_revive(rep, arena) for rep in request["outputs"]]
    kwargs = request.get("kwargs", {})
    device = request.get("device", "cpu")
    wire.send(conn, {"ok": True, "ready": True})
    wire.receive(conn)  # "go": the inputs are in place
    for args, slots in zip(inputs, outputs):
        if device != "cpu":
            args = [a.to(device) for a in args]
        _commit(function(*args, **kwargs), slots)
    return {"ok": True}


def _call(module, request: dict, conn=None) -> dict:
    import torch

    if request.get("op") == "time":
        return _timed(module, request, conn)
    target = request["target"]
    arena = _attach(request, conn)
    args = [_revive(a, arena) for a in request.get("args", [])]
    kwargs = {key: _revive(value, arena) for key, value in request.get("kwargs", {}).items()}
    for index in request.get("grad", []):
        args[index] = args[index].clone().requires_grad_(True)
    function = getattr(module, target, None)
    if function is None:
        raise AttributeError(f"attention.py has no function named {target}")
    seen, functions, ops = _recorder()
    with functions, ops, _entered(module) as entered:
        if target == "MultiHeadAttention":
            function = _instantiate(module, request)
        value = function(*args, **kwargs)
        grads = None
        if request.get("grad_outputs") is not None:
            inputs = [args[i] for i in request["grad"]]
            outputs = _flatten(value)
            pairs = [(o, g) for o, g in zip(outputs, request["grad_outputs"]) if o.requires_grad]
            if not pairs:
                raise RuntimeError("the result does not depend on the inputs through autograd (was it detached?)")
            grads = torch.autograd.grad(
                [o for o, _ in pairs], inputs, [g.to(o.dtype) for o, g in pairs], allow_unused=True
            )
            grads = [torch.zeros_like(x) if g is None else g for x, g in zip(inputs, grads)]
    reply = {"ok": True, "value": value, "grads": grads, "ops": sorted(seen | _THREAD_OPS), "entered": sorted(entered)}
    _THREAD_OPS.clear()
    return reply


def _serve(conn: socket.socket, spec: dict) -> None:
    """A child: move into its scratch folder, cap resources, load the submission, answer calls."""
    import confine
    import wire

    os.setsid()
    limits = spec["limits"]
    # from here on: PID 1 of a sandbox of its own (confine.py)
    scratch, report = confine.enter(
        spec["scratch"], spec["read"], spec["write"], limits, spec["cgroups"], spec["seccomp"]
    )
    if "broken" in report:  # half-built: say so and run nothing
        wire.send(conn, {"sandbox": report})
        os._exit(1)
    if spec.get("block_fused", True):
        _block_fused()
    if spec.get("imports") is not None:
        _allow_imports(spec["imports"], spec["hidden"], spec["packages"])
    os.environ["HOME"] = scratch
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    log = os.open("output.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    sys.stdin = open(os.devnull)
    sys.stdout = sys.stderr = _CappedStream(os.fdopen(os.dup(1), "w"), limits["output_bytes"])
    if spec.get("imports") is not None and spec.get("block_fused", True):
        _preload(spec["imports"])  # in its scratch folder (HOME), its output to the log, before the code guard
    module = None
    wire.send(conn, {"sandbox": report})  # before any student code runs
    while True:
        try:
            request = wire.receive(conn)
        except (EOFError, OSError):
            os._exit(0)
        try:
            if request["op"] == "load":
                module = _load(request["path"], spec.get("block_fused", True), spec.get("imports"))
                reply = {"ok": True, "names": sorted(n for n in vars(module) if not n.startswith("_"))}
            elif module is None:
                reply = {"ok": False, "error": "NotLoaded", "message": "the submission is not loaded"}
            else:
                reply = _call(module, request, conn)
        except BaseException as exc:  # noqa: BLE001 - the student's SystemExit and KeyboardInterrupt too
            reply = _error(exc)
        try:
            wire.send(conn, reply)
        except wire.WireError as error:
            wire.send(conn, {"ok": False, "error": "WireError", "message": str(error)})


def _warm_up() -> None:
    """Pay once, here, what the first recorded call would pay in every child (about a second)."""
    import torch

    x = torch.ones(2, 3, requires_grad=True)
    seen, functions, ops = _recorder()
    with functions, ops:
        y = torch.softmax(x @ x.transpose(-2, -1), dim=-1).masked_fill(torch.eye(2, dtype=torch.bool), 0.0)
        torch.autograd.grad(y, x, torch.ones_like(y))  # with a gradient given, as _call gives one (it loads sympy)


def main() -> None:
    """The zygote: import torch once, then fork a child for every spawn request.

    Requests come on the control socket (from the grader that started us) or on client
    sockets the control socket hands over (one per grading in a batch). Each is one
    SOCK_SEQPACKET message: b"C" with a client socket, or b"S" + JSON {"scratch", "limits"}
    with the socket the new child serves calls on; the child's pid goes back to the asker.
    """
    libdir, control_fd = sys.argv[1:3]
    grader = os.getppid()
    sys.path[:0] = [libdir]
    import confine  # the sandbox's own modules, imported before any privilege is dropped

    confine.die_with_parent(grader)  # from the start: the grader may die while torch is being imported
    import json
    import select

    import torch
    import torch.nn.functional  # noqa: F401 - imported once here so every child starts warm
    import torch.overrides  # noqa: F401
    import torch.utils._python_dispatch  # noqa: F401

    torch.set_num_threads(1)
    _warm_up()
    _find_fused_kernels()
    import wire  # noqa: F401

    if len(sys.argv) > 3:  # become this user once torch is imported (how the tests grade as an unprivileged user)
        user = int(sys.argv[3])
        os.setgroups([])
        os.setresgid(user, user, user)
        os.setresuid(user, user, user)
    confine.die_with_parent(grader)  # again: a change of user clears it. The grader killed (SIGKILL too): the
    # zygote dies, and with it every keeper
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    control = socket.socket(fileno=int(control_fd))
    control.send(b"R")
    clients: list[socket.socket] = []
    keepers: dict[socket.socket, list[int]] = {control: []}  # each asker's children, as pidfds (no PID reuse)
    while True:
        ready, _, _ = select.select([control, *clients], [], [])
        for conn in ready:
            try:
                message, fds, _, _ = socket.recv_fds(conn, 1 << 16, 1)
            except OSError:
                message, fds = b"", []
            if not message:  # the asker has gone (its grading ended or crashed): so do the children it asked for
                _kill_all(keepers.pop(conn, []))
                if conn is control:
                    for rest in keepers.values():
                        _kill_all(rest)
                    return  # the grader has gone: so do we
                clients.remove(conn)
                conn.close()
            elif message[:1] == b"C" and fds:
                client = socket.socket(fileno=fds[0])
                clients.append(client)
                keepers[client] = []
            elif message[:1] == b"S" and fds:
                spec = json.loads(message[1:])
                zygote = os.getpid()
                pid = os.fork()
                if pid == 0:
                    confine.die_with_parent(zygote)  # the zygote killed: this keeper, and its sandbox, die too
                    for other in (control, *clients, *(fd for rest in keepers.values() for fd in rest)):
                        _close(other)  # a child can reach no grader but its own
                    _serve(socket.socket(fileno=fds[0]), spec)
                    os._exit(0)
                os.close(fds[0])
                _track(keepers[conn], pid)
                conn.send(pid.to_bytes(8, "big"))


def _track(pidfds: list[int], pid: int) -> None:
    """Keep a pidfd of the child ``pid`` (it names that process even after its PID is reused); forget dead ones."""
    import select

    for fd in [fd for fd in pidfds if select.select([fd], [], [], 0)[0]]:  # readable: that child has exited
        pidfds.remove(fd)
        os.close(fd)
    try:
        pidfds.append(os.pidfd_open(pid))
    except OSError:  # exited already, or a kernel before 5.3: the grader's cgroup and PDEATHSIG remain
        pass


def _kill_all(pidfds: list[int]) -> None:
    """SIGKILL each child (a keeper: its sandbox's PID 1 and everything in that namespace die with it)."""
    for fd in pidfds:
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
        os.close(fd)


def _close(thing) -> None:
    if isinstance(thing, int):
        os.close(thing)
    else:
        thing.close()


if __name__ == "__main__":
    main()
