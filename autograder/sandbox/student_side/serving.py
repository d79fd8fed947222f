"""Serving, in a worker's child: confine it, load the submission, answer the grader's calls until the socket closes.

``_serve`` is the child's whole life (forked by the zygote, worker.py): ``confine.enter`` builds its sandbox, the
blocks go up (blocking.py), the submission loads (``_load``), and each request is answered: a call (``_call``,
recorded by recording.py), or a timed run through the grader's shared memory (``_timed``: ``_attach``, ``_revive``,
``_commit``). Only plain data crosses the socket (wire.py). Runs beside student code: the standard library and torch
only (student_side/__init__.py).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import tempfile
import traceback

if __package__:  # the grader's side: the project's tests call these in their own process
    from . import blocking, recording, wire
else:  # beside the student: the worker's library folder holds this folder's modules as top-level ones
    import blocking
    import recording
    import wire


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
    """What the grader learns of a student's exception: type, message, and the student's own frames, the last cited
    as the student sees it: "(attention.py, line M)", or, for a notebook's cell (compiled as "cellN/attention.py":
    submission.cell_file), "(cell N, line M)"."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith("attention.py")]
    where = f" ({_place(frames[-1].filename)}, line {frames[-1].lineno})" if frames else ""
    return {"ok": False, "error": type(exc).__name__, "message": f"{str(exc)[:500]}{where}"}


def _place(filename: str) -> str:
    """A frame's file as the student knows it: a notebook's cell by its number, else attention.py."""
    folder = os.path.basename(os.path.dirname(filename))
    number = folder.removeprefix("cell")
    return f"cell {number}" if folder.startswith("cell") and number.isdecimal() and len(number) < 7 else "attention.py"


def _load(path: str, guard: bool = True, allowed: list[str] | None = None):
    import importlib.util

    recording._record_threads()
    if guard:
        # before the code guard, as the packages themselves were
        blocking._preload(blocking._imported_modules(path, allowed or []))
        blocking._guard_code(path)
    spec = importlib.util.spec_from_file_location("attention", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["attention"] = module
    spec.loader.exec_module(module)
    return module


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


def _stepping(module, request: dict):
    """A run of steps on one object the student's class makes (``make``: its name and arguments), for a class whose
    state lives across calls (the decoding part's KVCache): called with the request's arguments, it makes the object,
    then runs each step in turn, a method of the object (``{"method": name, ...}``) or a function of the module
    (``{"function": name, ...}``), its ``args`` and ``kwargs`` each an index into the call's arguments, None, or
    ``"object"`` for the object itself. Its value: per step, [the step's value, len(object) after it]."""
    name, *init = request["make"]
    made = getattr(module, name, None)
    if made is None:
        raise AttributeError(f"attention.py has no class named {name}")

    def run(*args):
        thing = made(*init)

        def given(ref):
            return thing if ref == "object" else None if ref is None else args[ref]

        results = []
        for step in request["steps"]:
            function = getattr(thing, step["method"]) if "method" in step else getattr(module, step["function"])
            value = function(
                *map(given, step.get("args", [])), **{k: given(v) for k, v in step.get("kwargs", {}).items()}
            )
            results.append([value, len(thing)])
        return results

    return run


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


def _run(module, request: dict, function, args: list, kwargs: dict):
    """The call itself (a MultiHeadAttention made first, or a session of steps), and its gradients where asked."""
    import torch

    target = request["target"]
    if target == "MultiHeadAttention":
        function = _instantiate(module, request)
    elif "steps" in request:
        function = _stepping(module, request)
    value = function(*args, **kwargs)
    grads = None
    if request.get("grad_outputs") is not None:
        inputs = [args[i] for i in request["grad"]]
        outputs = _flatten(value)
        pairs = [(o, g) for o, g in zip(outputs, request["grad_outputs"]) if o.requires_grad]
        if not pairs:
            raise RuntimeError("the result does not depend on the inputs through autograd (was it detached?)")
        grads = torch.autograd.grad([o for o, _ in pairs], inputs, [g.to(o.dtype) for o, g in pairs], allow_unused=True)
        grads = [torch.zeros_like(x) if g is None else g for x, g in zip(inputs, grads)]
    return value, grads


def _call(module, request: dict, conn=None) -> dict:
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
    # the largest tensor the call makes, noted on every call alike by the op record (the memory check's wording; its
    # verdict is the grader's own measure of this process, sandbox/memory.py)
    memory = recording._Memory([*args, *kwargs.values()])
    seen, functions, ops = recording._recorder(memory=memory)
    table = None
    if request.get("substitute") is not None:
        # flat, to stay within the wire's nesting: {"names": [...], "calls": [[name, args, value]],
        # "vjps": [[name, args, upstream, grads]]}
        given = request["substitute"]
        cases: dict = {str(name): {"calls": [], "vjps": []} for name in given.get("names", [])}
        for name, call_args, value in given.get("calls", []):
            cases[name]["calls"].append({"args": _revive(call_args, arena), "value": _revive(value, arena)})
        for name, call_args, upstream, grads in given.get("vjps", []):
            cases[name]["vjps"].append(
                {
                    "args": _revive(call_args, arena),
                    "upstream": _revive(upstream, arena),
                    "grads": _revive(grads, arena),
                }
            )
        table = recording._Table(cases)
    with functions, ops, recording._entered(module, table) as entered:
        try:
            value, grads = _run(module, request, function, args, kwargs)
        except BaseException as exc:  # noqa: BLE001 - a call the grader still has answers to give runs again
            if table is None or not table.asked:
                # which of its own functions it entered before it raised: what may stand in when it runs again
                return {**_error(exc), "entered": sorted(entered)}
            value, grads = None, None
    ops = sorted(seen | recording._THREAD_OPS)
    reply = {"ok": True, "value": value, "grads": grads, "ops": ops, "entered": sorted(entered)}
    if table is not None:  # what the functions standing in were asked that the grader has not answered yet
        reply["asked"] = table.asked
        if table.asked:  # an answer made partly by the student's own functions is no answer: not sent
            reply["value"] = reply["grads"] = None
    reply["memory"] = memory.answer()
    recording._THREAD_OPS.clear()
    del args, kwargs, table
    recording._give_back()  # before the answer: the grader's next measure starts from what this process holds
    return reply


def _serve(conn: socket.socket, spec: dict) -> None:
    """A child: move into its scratch folder, cap resources, load the submission, answer calls."""
    import confine  # here: it imports landlock and seccomp as the library folder has them (never on the grader's side)

    os.setsid()
    limits = spec["limits"]
    # from here on: PID 1 of a sandbox of its own (confine.py)
    scratch, report = confine.enter(
        spec["scratch"], spec["read"], spec["write"], limits, spec["cgroups"], spec["seccomp"]
    )
    if "broken" in report:  # half-built: say so and run nothing
        wire.send(conn, {"sandbox": report})
        os._exit(1)
    measured = spec.get("measured", True)  # the grader measures every call's memory (sandbox/memory.py), or none
    if measured:
        recording._map_in_libraries()  # before the grader first measures this process (sandbox/memory.py)
        recording._keep_freed()  # a call's freed memory kept for its own reuse until it ends (sandbox/memory.py)
    if spec.get("block_fused", True):
        blocking._block_fused()
    if spec.get("imports") is not None:
        blocking._allow_imports(spec["imports"], spec["hidden"], spec["packages"])
    os.environ["HOME"] = os.environ["TMPDIR"] = scratch  # the one folder it may write: torch's caches go there too
    tempfile.tempdir = None  # tempfile reads TMPDIR again (torch._dynamo's first import makes a folder there)
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
        blocking._preload(spec["imports"])  # in its scratch folder (HOME), its output to the log, before the code guard
    module = None
    wire.send(conn, {"sandbox": report})  # before any student code runs
    while True:
        try:
            request = wire.receive(conn)
        except (EOFError, OSError):
            os._exit(0)
        except wire.WireError as error:  # a request over the wire's bounds: answered, then this child ends (the rest
            # of the message is still on the socket, so no later one could be read); the grader starts a fresh one
            message = f"the worker could not read the grader's request: {error}"
            wire.send(conn, {"ok": False, "error": "UnreadableRequest", "message": message})
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
        # a later call's collection walks only what it made (recording._settle); a timed run's answer waits for nothing
        if measured and not (isinstance(request, dict) and request.get("op") == "time"):
            recording._settle()
        try:
            wire.send(conn, reply)  # nothing written where it is over the wire's bounds (wire.bounded)
        except wire.WireError as error:  # the student's result: not of a kind or size the wire carries
            message = f"the result is too large to send or of a kind that cannot be sent: {error}"
            wire.send(conn, {"ok": False, "error": "WireError", "message": message})
