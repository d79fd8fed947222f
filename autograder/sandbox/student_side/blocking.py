"""Blocking, in a worker's child, what the assignment rules out before the submission loads.

Fused attention unreachable (``_block_fused``: every fused-attention kernel of the dispatcher, found once in the
zygote by ``_find_fused_kernels``), code built at run time refused (``_guard_code``: an audit hook), and the
submission's imports held to the settings' list (``_allow_imports``, ``_preload``). Runs beside student code: the
standard library and torch only (student_side/__init__.py).
"""

from __future__ import annotations

import os
import re
import sys

FORBIDDEN = (
    "scaled_dot_product",
    "multi_head_attention",
    "flash_attention",
    "efficient_attention",
    "multiheadattention",
)


class NotAvailable(RuntimeError):
    """A fused attention entry point, called in the sandbox: the assignment is to build attention from its pieces."""


_FUSED_KERNELS: list[tuple[str, str]] = []  # (aten op.overload, dispatch key) with a kernel: found once, in the zygote
# torch's own attention written in Python (the integrity scan names them too): its functions by name, in the modules
# that hold them (imported in the zygote), and the functions themselves, found once there
PYTHON_ATTENTION = ("attention_23", "math_attention", "sdpa_dense", "flex_attention")
PYTHON_ATTENTION_MODULES = (
    "torch.onnx.ops",
    "torch.nn.attention.flex_attention",
    "torch._higher_order_ops.flex_attention",
)
_PYTHON_ATTENTION: list = []
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


def _find_python_attention() -> None:
    """torch's attention written in Python, as plain functions (a custom op's own Python, ``_init_fn``: the function
    its kernel and its decomposition table both call), in the zygote, once: ``_block_fused`` replaces their code."""
    import importlib
    import types

    for name in PYTHON_ATTENTION_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a torch without it: nothing of it to call either
            continue
    for name, module in list(sys.modules.items()):
        space = vars(module) if name.startswith("torch.") and module is not None else {}
        for function in (getattr(space[key], "_init_fn", space[key]) for key in PYTHON_ATTENTION if key in space):
            if isinstance(function, types.FunctionType) and function.__closure__ is None:
                if function not in _PYTHON_ATTENTION:
                    _PYTHON_ATTENTION.append(function)


def _python_attention_refused(*args, **kwargs):
    """The code torch's own attention written in Python runs in the sandbox: it refers to builtins only, since it
    runs with the replaced function's globals."""
    raise RuntimeError(
        "torch's own attention, written in Python, is not available in this assignment: build attention from the"
        " functions above"
    )


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
    torch.compile = _as_written
    for function in _PYTHON_ATTENTION:  # in place: every reference (a decomposition table's, a custom op's) meets it
        function.__code__ = _python_attention_refused.__code__


def _as_written(model=None, **options):
    """``torch.compile`` in the sandbox: the function or module as the student wrote it, run eagerly. What a compiled
    function computes is what its code says; graded as written, its ops are the ones recorded and timed (and the
    compiler's own code generation, a C++ toolchain and files of its own, has no place in a sandbox)."""
    if model is None:  # @torch.compile(mode=...): a decorator
        return _as_written
    return model


# Audit events (PEP 578) that reach around the fused-kernel block or the grader's objects: every object the
# collector knows, code and functions made from parts. Refused in the student's process once the code guard is on,
# with ctypes loading a library by name (libtorch's, to call its kernels by their symbols).
_REFUSED_EVENTS = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents", "code.__new__",
                             "function.__new__", "marshal.load"})  # fmt: skip
_CODE_EVENTS = frozenset({"compile", "exec", "marshal.loads"})
# what ctypes may still load by name, besides the program's own symbols (None: libc's; libtorch's are not among
# them): NVML, which torch.cuda loads to count devices
_LIBRARIES = frozenset({"libnvidia-ml.so.1"})


_CELL_NAME = re.compile(r"cell[1-9][0-9]{0,5}/attention\.py")

# What the standard library compiles for the student's own classes and annotations, recognised by its shape alone
# (which does not depend on who called the library): every pattern below runs in linear time (no nested or
# overlapping quantifiers), on text that its caller made.
# An annotation, as typing's ForwardRef compiles it (``Optional[Tensor]``, ``torch.device | str | None``,
# ``Callable[..., "Tensor"]``): names, dots, subscripts, commas, ``|`` and plain string literals (a quote never right
# after a name character: an f-string's braces hold any expression). No call, no lambda, no assignment: nothing that
# runs code but lookups and ``__getitem__``/``__or__``.
_ANNOTATION = re.compile(r"""(?:[\w.\[\], |]|(?<!\w)'[^'\\\n]*'|(?<!\w)"[^"\\\n]*")*""")
# A method that dataclasses writes for a class (Python 3.10-3.12 ``_create_fn``): its two-line header, one line per
# field, its return; every name an identifier. No loop, no nested function, no import: attribute assignments, the
# default factories called, the repr, comparisons, the hash, the frozen class's guards.
_DATACLASS_HEAD = re.compile(r"def __create_fn__\((?:\w+(?:, \w+)*)?\):")
_DATACLASS_DEF = re.compile(r" def \w+\((?:\*|\w+(?::_type_\w+(?:=\w+)?)?)(?:,(?:\*|\w+(?::_type_\w+(?:=\w+)?)?))*\)"
                            r"(?:->_return_type)?:")  # fmt: skip
_FIELDS = r"\((?:self\.\w+,)*\)"
_DATACLASS_LINE = re.compile(
    "|".join((
        r"  pass",
        r"  \w+\.\w+=\w+(?:\(\))?",  # self.x=x, self.x=_dflt_x()
        r"  \w+\.\w+=\w+\(\) if \w+ is _HAS_DEFAULT_FACTORY else \w+",
        r"  __dataclass_builtins_object__\.__setattr__\(\w+,'\w+',\w+(?:\(\))?\)",
        r"  __dataclass_builtins_object__\.__setattr__\(\w+,'\w+',\w+\(\) if \w+ is _HAS_DEFAULT_FACTORY else \w+\)",
        r"  \w+\.__post_init__\((?:\w+(?:,\w+)*)?\)",
        r'  return self\.__class__\.__qualname__ \+ f"\((?:\w+=\{self\.\w+!r\}(?:, \w+=\{self\.\w+!r\})*)?\)"',
        r"  if type\(self\) is cls or name in \((?:'\w+',)*\):",
        r'   raise FrozenInstanceError\(f"cannot (?:assign to|delete) field \{name!r\}"\)',
        r"  super\(cls, self\)\.__(?:setattr__\(name, value|delattr__\(name)\)",
        r"  if other\.__class__ is self\.__class__:",
        rf"   return {_FIELDS}(?:==|<|<=|>|>=){_FIELDS.replace('self', 'other')}",
        r"  return NotImplemented",
        rf"  return hash\({_FIELDS}\)",
    ))
)  # fmt: skip
_DATACLASS_TAIL = re.compile(r" return \w+")
# collections.namedtuple's one line: its constructor, every name an identifier
_NAMEDTUPLE = re.compile(r"lambda _cls, (?:\w+(?:, \w+)*,?)?: _tuple_new\(_cls, \((?:\w+(?:, \w+)*,?)?\)\)")


def _cell_sources(source: bytes) -> frozenset[tuple[bytes, str]]:
    """The notebook cells the read stage wrote into ``source`` (submission._as_cell), as (UTF-8 source, file name):
    each a statement at the file's top level of exactly the shape ``try: exec(compile(<cell's source>,
    'cellN/attention.py', 'exec'), globals()) except ...``. No other string of the file is code the guard runs."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    found = set()
    for node in tree.body:
        if not (isinstance(node, ast.Try) and len(node.body) == 1 and isinstance(node.body[0], ast.Expr)):
            continue
        run = node.body[0].value
        if not (_called(run, "exec", 2) and _called(run.args[0], "compile", 3) and _called(run.args[1], "globals", 0)):
            continue
        code, name, mode = (
            argument.value if isinstance(argument, ast.Constant) else None for argument in run.args[0].args
        )
        if isinstance(code, str) and isinstance(name, str) and _CELL_NAME.fullmatch(name) and mode == "exec":
            try:
                found.add((code.encode(), name))
            except UnicodeEncodeError:
                continue
    return frozenset(found)


def _called(node, name: str, arguments: int) -> bool:
    """Whether ``node`` is ``name(...)`` with ``arguments`` positional arguments and no keywords."""
    import ast

    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == name
        and len(node.args) == arguments
        and not node.keywords
    )


def _guard_code(path: str) -> None:
    """Before the submission runs: an audit hook (PEP 578, which nothing in Python can remove) refuses code built at
    run time and the ways around the fused-kernel block.

    Refused (``NotAvailable``): compiling source that is neither the submission's own file, nor a notebook cell's
    source compiled by the cell's own wrapper (``_cell_sources``: from the file's top-level code, under the cell's
    name), nor the bytes of a file on a read-only mount (an import of torch's or Python's modules). Any other string
    of the file is not accepted as code: carried as a constant, a text that a library compiles (the dataclasses of
    ``torch.onnx``, whose eager attention is torch's own) would otherwise pass as the student's. Code
    or functions made from parts (``types.CodeType``, ``code.replace``, ``types.FunctionType``), ``marshal`` of
    anything but an import's cached bytecode, running a module that was already imported a second time
    (``importlib.reload``, a module loaded again from torch's file, which would bring back what ``_block_fused``
    replaced), ``gc.get_objects`` / ``get_referrers`` / ``get_referents``, and ctypes loading a library by name
    (``CDLL(None)``, the program's own symbols, stays: libtorch's are not among them).
    What the standard library compiles for what the student wrote is accepted by its caller's code and its text's
    shape (the ``_ANNOTATION``, ``_DATACLASS_*`` and ``_NAMEDTUPLE`` patterns; ``ast.parse`` with PyCF_ONLY_AST).
    The hook's state is immutable and bound at definition (no global or builtin is looked up when it runs), so
    replacing the worker's globals or builtins does not change what it refuses."""
    import ast
    import collections
    import dataclasses
    import importlib._bootstrap_external as external
    import typing

    with open(path, "rb") as handle:
        own = handle.read()
    cells = _cell_sources(own)
    loaded = frozenset(
        file for module in list(sys.modules.values()) if isinstance(file := getattr(module, "__file__", None), str)
    )
    # the devices the sandbox may write (its private tmpfs mounts); where there are none (a sandbox without a mount
    # namespace: the scratch folder on the same file system as Python's), files there cannot be told apart this way
    writable = _devices(os.getcwd(), "/tmp", "/dev/shm") - _devices(os.__file__, sys.modules["torch"].__file__)
    # the file's name as its code has it (importlib makes the path absolute) or as it was given
    names = frozenset({path, os.path.abspath(path)})
    # the standard library's own compilers of text for what the student wrote: a class's methods, an annotation, a
    # syntax tree (their code objects: immutable)
    library = (
        collections.namedtuple.__code__,
        dataclasses._create_fn.__code__,
        frozenset({typing.ForwardRef.__init__.__code__}),
        ast.parse.__code__,
    )
    sys.addaudithook(_code_hook(own, cells, names, loaded, writable, library, external._compile_bytecode.__code__))


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
    own,
    cells,
    names,
    loaded,
    writable,
    library,
    bytecode,
    refused=_REFUSED_EVENTS,
    code_events=_CODE_EVENTS,
    libraries=_LIBRARIES,
    shapes=(_ANNOTATION, _DATACLASS_HEAD, _DATACLASS_DEF, _DATACLASS_LINE, _DATACLASS_TAIL, _NAMEDTUPLE),
):
    """The hook itself. What it uses is bound here, immutable (frozensets, bytes, code objects, C functions; its
    frame, which a traceback shows, holds nothing else): no global or builtin is looked up when it runs."""

    namedtuple, dataclass, annotations, parse = library
    annotation, head, signature, line, tail, constructor = shapes

    def hook(
        event,
        args,
        frame=sys._getframe,
        UnicodeDecodeError=UnicodeDecodeError,
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
            caller = frame(1).f_code
            if content == own:
                return
            if caller == parse:  # ast.parse returns a syntax tree, never code, while its flags hold PyCF_ONLY_AST
                flags = frame(1).f_locals.get("flags")
                if type(flags) is int and flags & 0x400:
                    return
            elif caller == dataclass or caller == namedtuple or caller in annotations:  # for a class, an annotation
                try:
                    text = content.decode("utf-8")
                except UnicodeDecodeError:
                    text = ""
                lines = text.split("\n") if text else []
                if caller == namedtuple:
                    if constructor.fullmatch(text) is not None:
                        return
                elif caller in annotations:
                    if text and annotation.fullmatch(text) is not None:
                        return
                elif (
                    lines[3:]
                    and head.fullmatch(lines[0]) is not None
                    and signature.fullmatch(lines[1]) is not None
                    and tail.fullmatch(lines[-1]) is not None
                ):
                    for body in lines[2:-1]:
                        if line.fullmatch(body) is None:
                            break
                    else:
                        return
            if (
                type(name) is str
                and (content, name) in cells
                and caller.co_filename in names
                and caller.co_name == "<module>"
            ):
                return  # a notebook cell, compiled by its wrapper at the top of the file the read stage wrote
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
    # and the worker's __main__ (its own modules, serving.py's wire among them, were imported before this is set)
    theirs = permitted | frozenset(packages) | {"__main__"}
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
