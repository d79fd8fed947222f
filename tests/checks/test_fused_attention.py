"""Fused attention is unreachable in a way the student's code cannot undo.

The attacks: the block undone from inside the process (a finalizer listed in weakref.finalize's registry),
``torch.vmap`` over the fused function (functorch's batched kernels), torch's own multi-head attention source run
through ``code.InteractiveInterpreter().runsource``, and torch's own attention written in Python (torch.onnx.ops'
eager Attention-23), called directly (its import builds code: it does not load) and with the texts that import
compiles carried as string constants. Each is an overlay under tests/submissions/overlays, graded here with the
worker as root and as an unprivileged user (its exact grade in tests/grading_cases.py). The probes below check the
mechanisms in one sandbox each: the dispatcher block, which no route from Python undoes, and the worker's code guard
(an audit hook), which refuses code built at run time while honest code (imports, namedtuple, a notebook's cells)
still runs.
"""

from __future__ import annotations

import json

import pytest
import torch

from autograder.checks.integrity import fused_uses, tampering
from autograder.read.submission import notebook_source
from tests.attacks import assert_costs_only_its_points, overlaid
from tests.graded import Sandboxed
from tests.helpers import REFERENCE, SUBMISSIONS

ATTACKS = ("fused_undo_block", "fused_vmap", "fused_interpreter_mha", "fused_onnx_attention", "fused_onnx_smuggled")
NOT_AVAILABLE = "not available in this assignment"
BUILT_AT_RUN_TIME = "NotAvailable: building code at run time"


# the fused-attention attacks graded with one zygote, the worker root or unprivileged (the graded fixture)
GRADED = Sandboxed(lambda base: [overlaid(base, name) for name in ATTACKS])


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", ATTACKS)
def test_each_attack_loses_exactly_its_points(graded, name):
    """The attack loses the points tests/grading_cases.py names (computed from the settings), with the feedback
    it names; the rest it keeps."""
    assert_costs_only_its_points(graded["results"][name]["result"], name)


BLOCK_PROBE = """
import _thread, gc, sys, time, weakref
import torch
import torch.nn.functional as F

def _q(*shape):
    return torch.randn(*(shape or (2, 1, 3, 4)))

def _worker_globals():
    # the namespaces of the worker's own modules: the copies in its library folder (worker.py, __main__, among them),
    # where everything else is a link to site-packages
    import os
    lib = os.path.dirname(sys.modules["wire"].__file__)
    return [vars(module) for module in list(sys.modules.values())
            if os.path.dirname(getattr(module, "__file__", None) or "") == lib and not os.path.islink(module.__file__)]

def _undo():
    # every way found from Python to what keeps the block: finalizers (torch's own libraries have them too: all
    # run), the collector, the worker's globals
    undone = {"finalizers": 0, "gc": "ran", "worker_globals": 0, "worker_modules": len(_worker_globals())}
    for finalizer, info in list(weakref.finalize._registry.items()):
        if "_del_library" in repr(info.func):
            finalizer()
            undone["finalizers"] += 1
    try:
        gc.get_objects()
    except Exception as error:
        undone["gc"] = type(error).__name__
    for value in [value for space in _worker_globals() for value in list(space.values())]:
        for item in value if isinstance(value, (list, tuple, set)) else [value]:
            if isinstance(item, (torch.library.Library, torch._C._DispatchModule)):
                item.reset() if hasattr(item, "reset") else item._destroy()
                undone["worker_globals"] += 1
    return undone

UNDONE = _undo()

CALLS = {
    "F": lambda: F.scaled_dot_product_attention(_q(), _q(), _q()),
    "vmap": lambda: torch.vmap(F.scaled_dot_product_attention)(_q(), _q(), _q()),
    "vmap_twice": lambda: torch.vmap(torch.vmap(F.scaled_dot_product_attention))(_q(), _q(), _q()),
    "vmap_math": lambda: torch.vmap(torch.ops.aten._scaled_dot_product_attention_math)(_q(), _q(), _q()),
    "vmap_flash_cpu": lambda: torch.vmap(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu)(
        _q(), _q(), _q()),
    "func_grad": lambda: torch.func.grad(lambda q: F.scaled_dot_product_attention(q, _q(), _q()).sum())(_q()),
    "autocast": lambda: torch.autocast("cpu")(lambda: F.scaled_dot_product_attention(_q(), _q(), _q()))(),
    "meta": lambda: F.scaled_dot_product_attention(*(_q().to("meta") for _ in range(3))),
    "quantizable_mha": lambda: torch.ao.nn.quantizable.MultiheadAttention(4, 2, batch_first=True)(
        _q(2, 3, 4), _q(2, 3, 4), _q(2, 3, 4)),
}

def _outcome(call):
    try:
        call()
        return "ran"
    except Exception as error:
        return type(error).__name__ + ": " + str(error)

def attention_scores(Q, K):
    found = {name: _outcome(call) for name, call in CALLS.items()}
    done = []
    _thread.start_new_thread(lambda: done.append(_outcome(CALLS["vmap"])), ())
    while not done:
        time.sleep(0.001)
    found["vmap_raw_thread"] = done[0]
    return {"undone": UNDONE, "calls": found}
"""


@pytest.mark.timeout(120)
def test_the_block_covers_functorch_and_cannot_be_undone_from_python(sandbox):
    """No finalizer, collector entry or worker global holds the block; vmap, func.grad, autocast, Meta, the
    quantizable MultiheadAttention and a raw thread all meet 'not available in this assignment'."""
    with sandbox(BLOCK_PROBE) as box:
        assert box.load().ok, box.load_reply
        found = box.call("attention_scores", (torch.zeros(1), torch.zeros(1)), timeout=60)
    assert found.ok, found.describe()
    undone = found.value["undone"]
    assert undone.pop("worker_modules") >= 4, undone  # the zygote's, serving.py's, blocking.py's, recording.py's...
    assert undone["gc"] == "NotAvailable" and undone["worker_globals"] == 0, undone  # torch's finalizers may run
    assert set(found.value["calls"]) == {
        "F", "vmap", "vmap_twice", "vmap_math", "vmap_flash_cpu", "func_grad", "autocast", "meta",
        "quantizable_mha", "vmap_raw_thread",
    }  # fmt: skip
    for name, outcome in found.value["calls"].items():
        assert outcome.startswith("NotAvailable") and NOT_AVAILABLE in outcome, (name, outcome)


GUARD_PROBE = """
import builtins, code, collections, gc, importlib, importlib.util, marshal, sys, types
import torch.nn.functional as F

try:  # a notebook cell's wrapper, as the read stage writes it (submission._as_cell): the guard lets its cell run
    exec(compile('CONSTANT = 1', 'cell1/attention.py', 'exec'), globals())
except Exception as error:
    print('cell 1 raised', type(error).__name__, error)

def _respec():
    spec = importlib.util.spec_from_file_location("functional_again", F.__file__)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))

def _ctypes():
    import ctypes, torch
    return ctypes.CDLL(torch._C.__file__)  # libtorch's Python binding, to reach its kernels by symbol

# the standard library's compilers, which the guard lets compile text of their own shape, given other text
def _parse_with_flags_patched():
    import ast
    ast.PyCF_ONLY_AST = 0  # ast.parse now compiles code
    try:
        return ast.parse("y = 4", "x", "exec")
    finally:
        ast.PyCF_ONLY_AST = 1024

def _dataclass_body():
    import dataclasses
    return dataclasses._create_fn("f", ("self",), ["import os", "return os.getpid()"], globals={})

def _dataclass_field_name():
    import dataclasses
    class Injected:
        __annotations__ = {"x:int=0):\\n  import os\\n  def g(": int}
    return dataclasses.dataclass(Injected)

def _dataclass_nested_def():
    import dataclasses
    return dataclasses._create_fn("f", ("self",), ["def g(): return 1"], globals={})

def _dataclass_repr_payload():
    import dataclasses
    class Injected:
        __annotations__ = {"x={__import__('os').getpid()}": int}
    return repr(dataclasses.dataclass(Injected)(1))

def _honest_dataclass():
    import dataclasses
    Point = dataclasses.make_dataclass("Point", [("x", int), ("y", int, dataclasses.field(default=2))], frozen=True)
    return repr(Point(1)), Point(1) == Point(1, 2), hash(Point(1)) == hash(Point(1, 2))

def _honest_annotations():
    import typing
    def f(q: "typing.Optional[torch.Tensor]", k: "dict[str, 'int'] | None" = None) -> "tuple[int, ...]": ...
    return sorted(typing.get_type_hints(f, {"typing": typing, "torch": __import__("torch")}))

REFUSED = {
    "runsource": lambda: code.InteractiveInterpreter({}).runsource("x = " + "1"),
    "exec": lambda: exec("x = " + "1"),
    "eval": lambda: eval("1 + " + "1"),
    # a string constant of the file is not code the guard runs, nor a cell's source compiled elsewhere
    "exec_constant": lambda: exec("x = 1"),
    "cell_elsewhere": lambda: exec(compile('CONSTANT = 1', 'cell1/attention.py', 'exec'), {}),
    "compile_tree": lambda: compile(__import__("ast").Module([], []), "x", "exec"),
    "FunctionType": lambda: types.FunctionType((lambda: 0).__code__, {}),
    "code_replace": lambda: (lambda: 0).__code__.replace(co_name="again"),
    "marshal": lambda: marshal.loads(marshal.dumps((lambda: 0).__code__)),
    "reload": lambda: importlib.reload(F),
    "respec": _respec,
    "compile_torch_file": lambda: exec(compile(open(F.__file__).read(), F.__file__, "exec"), {}),
    "timeit": lambda: __import__("timeit").timeit("1", number=1),
    "pickle": lambda: __import__("pickle").loads(b"cbuiltins\\nexec\\n(S'y = 3'\\ntR."),
    "gc": lambda: gc.get_objects(),
    "ctypes": _ctypes,
    "parse_flags_patched": _parse_with_flags_patched,
    "dataclass_body": _dataclass_body,
    "dataclass_field_name": _dataclass_field_name,
    "dataclass_nested_def": _dataclass_nested_def,
    "dataclass_repr_payload": _dataclass_repr_payload,
    "forward_ref_call": lambda: __import__("typing").ForwardRef("__import__('os').getpid()"),
    # an f-string's braces hold any expression (found by a red team: a lambda smuggled through get_type_hints)
    "forward_ref_fstring": lambda: __import__("typing").ForwardRef("f'{(lambda: 1)()}'"),
    "annotation_lambda": lambda: __import__("inspect").get_annotations(_annotated_lambda, eval_str=True),
}
def _annotated_lambda(x: "(lambda: 0)()"): ...

ALLOWED_CTYPES = lambda: __import__("ctypes").CDLL(None).getpid() > 0  # the program's own symbols (libc)
ALLOWED = {
    "namedtuple": lambda: collections.namedtuple("Pair", "a b")(1, 2).b,
    "fresh_import": lambda: __import__("colorsys").rgb_to_hsv(1.0, 0.0, 0.0)[2],
    "constant": lambda: CONSTANT,
    "ctypes_libc": ALLOWED_CTYPES,
    "dataclass": _honest_dataclass,
    "annotations": _honest_annotations,
    "parse": lambda: type(__import__("ast").parse("y = 4")).__name__,
}

def _worker_globals():
    # the namespaces of the worker's own modules: the copies in its library folder (worker.py, __main__, among them),
    # where everything else is a link to site-packages
    import os
    lib = os.path.dirname(sys.modules["wire"].__file__)
    return [vars(module) for module in list(sys.modules.values())
            if os.path.dirname(getattr(module, "__file__", None) or "") == lib and not os.path.islink(module.__file__)]

def _outcome(call):
    try:
        return "ran: " + str(call())
    except Exception as error:
        return type(error).__name__ + ": " + str(error)

def attention_scores(Q, K):
    found = {name: _outcome(call) for name, call in {**REFUSED, **ALLOWED}.items()}
    # the guard looks nothing up when it runs: new builtins and worker globals change nothing
    worker = _worker_globals()
    saved, saved_worker, failed = dict(vars(builtins)), [dict(space) for space in worker], []
    builtins.isinstance = builtins.type = builtins.bytes = builtins.open = builtins.str = lambda *a, **k: True
    for space in worker:
        for name in [n for n in space if n.startswith("_") and not n.startswith("__")]:
            space[name] = None
    try:
        exec("x = " + "2")
    except Exception as error:
        failed.append(error)
    finally:
        vars(builtins).update(saved)
        for space, kept in zip(worker, saved_worker):
            space.update(kept)
    found["exec_after_patching"] = _outcome(lambda: (_ for _ in ()).throw(failed[0]) if failed else "not refused")
    return found
"""


@pytest.mark.timeout(120)
def test_code_built_at_run_time_is_refused_and_honest_code_runs(sandbox):
    """Every way tried to build or run code at run time is refused in the student's sandbox, also after the
    builtins and the worker's globals are replaced, and so is code given as a string constant or passed through the
    standard library's own compilers (dataclasses, typing, inspect, ast with its flags patched); imports, namedtuple,
    dataclasses, annotations, ast.parse and a notebook cell run by its wrapper run."""
    with sandbox(GUARD_PROBE) as box:
        assert box.load().ok, box.load_reply
        found = box.call("attention_scores", (torch.zeros(1), torch.zeros(1)), timeout=60)
    assert found.ok, found.describe()
    found = found.value
    refused = {"runsource", "exec", "eval", "exec_constant", "cell_elsewhere", "compile_tree", "reload", "respec",
               "compile_torch_file", "timeit", "pickle", "marshal", "exec_after_patching", "parse_flags_patched",
               "dataclass_body", "dataclass_field_name", "dataclass_nested_def", "dataclass_repr_payload",
               "forward_ref_call", "forward_ref_fstring", "annotation_lambda"}  # fmt: skip
    for name in refused:
        assert found.pop(name).startswith(BUILT_AT_RUN_TIME), name
    assert found.pop("FunctionType") == (
        "NotAvailable: function.__new__ is not available in this assignment: attention.py needs none of it"
    )
    assert found.pop("code_replace").startswith("NotAvailable: code.__new__ is not available")
    assert found.pop("gc").startswith("NotAvailable: gc.get_objects is not available")
    assert found.pop("ctypes").startswith("NotAvailable: ctypes.dlopen is not available")
    assert found == {
        "namedtuple": "ran: 2",
        "fresh_import": "ran: 1.0",
        "constant": "ran: 1",
        "ctypes_libc": "ran: True",
        "dataclass": "ran: ('Point(x=1, y=2)', True, True)",
        "annotations": "ran: ['k', 'q', 'return']",
        "parse": "ran: Module",
    }


@pytest.mark.timeout(120)
def test_a_notebooks_cells_still_load_under_the_guard(sandbox):
    """The grader runs a notebook's cells as compile() of their sources: they load; exec of a constant in a cell is
    refused, which stops that cell alone."""
    cells = [
        {"cell_type": "code", "metadata": {}, "source": "import torch\nDOUBLE = 2"},
        {"cell_type": "code", "metadata": {}, "source": "exec('DOUBLE = 3')"},
        {
            "cell_type": "code",
            "metadata": {},
            "source": ["def scale_scores(scores, d_k):\n", "    return scores * DOUBLE"],
        },
    ]
    source = notebook_source(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    with sandbox(source) as box:
        assert box.load().ok, box.load_reply
        reply = box.call("scale_scores", (torch.ones(2), 4), timeout=30)
    assert reply.ok, reply.describe()
    assert reply.value.tolist() == [2.0, 2.0]


@pytest.mark.parametrize(
    "code",
    [
        "import code\ncode.InteractiveInterpreter({}).runsource(text)",
        "from code import InteractiveConsole",
        "import codeop",
        "import runpy",
        "import marshal",
        "import types\nf = types.FunctionType(g.__code__, {})",
        "import torch\ntorch.ctypes.memmove(1, 2, 3)",
        "import ctypes",
    ],
)
def test_code_built_at_run_time_is_flagged_in_the_source(code):
    """Interpreter objects, code and functions made from parts, marshal and ctypes: each found, with its line."""
    found = tampering(code)
    assert set(found) == {"builds_code"} and all(place.startswith("line ") for place in found["builds_code"]), found


def test_only_the_attack_that_builds_code_leaves_evidence_in_its_source():
    """The interpreter attack is flagged in its source; the two others leave nothing there (the block stops them)."""
    sources = {name: (SUBMISSIONS / "overlays" / f"{name}.py").read_text() for name in ATTACKS}
    assert "builds_code" in tampering(sources["fused_interpreter_mha"])
    assert tampering(sources["fused_undo_block"]) == tampering(sources["fused_vmap"]) == {}


def test_torchs_attention_in_python_is_found_in_the_source():
    """Both issue-44 attacks name torch.onnx.ops in the source, where integrity finds it even when the file does not
    load; the reference names no attention of torch's."""
    for name in ("fused_onnx_attention", "fused_onnx_smuggled"):
        found = fused_uses((SUBMISSIONS / "overlays" / f"{name}.py").read_text())
        assert any(place.endswith("import of torch.onnx.ops") for place in found), (name, found)
    assert fused_uses(REFERENCE.read_text()) == []
