"""Fused attention in a submission: found in its source, and in the ops its calls ran."""

from __future__ import annotations

import ast
import re
import time
from pathlib import Path

SCAN_SECONDS = 10.0  # the whole scan of one source, nested strings included: beyond it, the source is flagged


class _Unscannable(Exception):
    """The source (or Python inside one of its strings) nests too deeply to parse, or the scan ran out of time."""


# The syntax trees of the source scanned last and of the strings in it that are Python (None: not Python; a str:
# why it could not be parsed), shared by the three scans of both integrity checks: each source is parsed once.
# the gate (handed_in) bounds the source's size (limits.source_kb) before it gets here.
_TREES: dict[str, ast.AST | str | None] = {}


def _scanning(source: str) -> None:
    """A new source to scan: forget the trees of the last one (a string of it keeps its tree while it is scanned)."""
    if source not in _TREES:
        _TREES.clear()


def _tree(source: str, deadline: float) -> ast.AST | None:
    """The syntax tree of ``source``, parsed once; None where it is not Python."""
    if source not in _TREES:
        if time.monotonic() > deadline:
            raise _Unscannable(f"the scan ran out of time ({SCAN_SECONDS:g} s)")
        try:
            _TREES[source] = ast.parse(source)
        except (SyntaxError, ValueError):
            _TREES[source] = None
        except (RecursionError, MemoryError):  # the parser's own limits: the grader must not fail on them
            _TREES[source] = "code nested too deeply to scan"
    tree = _TREES[source]
    if isinstance(tree, str):
        raise _Unscannable(tree)
    return tree


FUSED_NAMES = ("scaled_dot_product_attention", "MultiheadAttention", "multi_head_attention_forward")
# torch's own attention written in Python: the functions, and the modules that hold them
PYTHON_ATTENTION = ("attention_23", "math_attention", "sdpa_dense", "flex_attention")
ATTENTION_MODULES = ("torch.onnx", "torch.nn.attention.flex_attention", "torch._higher_order_ops.flex_attention")


def fused_uses(source: str, depth: int = 3) -> list[str]:
    """Places where the source reaches for PyTorch's fused attention (``F.scaled_dot_product_attention``, ...) or its
    attention written in Python (``torch.onnx.ops.attention``, flex attention's ``math_attention``, ...).

    String literals that are themselves Python (a notebook's cells, code given to exec) are
    searched too, ``depth`` levels deep. A source too deep to scan is ``dynamic_reach``'s finding.
    """
    try:
        _scanning(source)
        return _fused_uses(source, depth, time.monotonic() + SCAN_SECONDS, _cell_numbers(source))
    except _Unscannable:
        return []


def _cell_numbers(source: str) -> dict[str, int]:
    """A notebook's cells in the graded source, code -> the cell's number (submission.cells_of): what is found in a
    cell is cited as "cell N, line M", as the student counts them."""
    from autograder.read.submission import cells_of

    try:
        tree = _tree(source, time.monotonic() + SCAN_SECONDS)  # the scans' own parse, shared
    except _Unscannable:
        return {}
    if tree is None:
        return {}
    return {code: number for number, code in cells_of(source, tree).items()}


def _in_cell(cells: dict[str, int] | None, code: str) -> str:
    """ "cell N, " for a notebook cell's code at the graded source's top level, else ""."""
    number = (cells or {}).get(code)
    return f"cell {number}, " if number else ""


def _fused_uses(source: str, depth: int, deadline: float, cells: dict[str, int] | None = None) -> list[str]:
    tree = _tree(source, deadline)
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and (
            _is_fused(node.attr) or (node.attr == "attention" and _call_name(node.value) == "ops")
        ):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id == "self"):
                found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and (
            modules := [m for m in _imported(node) if m.startswith(ATTENTION_MODULES)]
        ):
            found.append(f"line {node.lineno}: import of {modules[0]}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch"):
            found += [f"line {node.lineno}: import of {alias.name}" for alias in node.names if _is_fused(alias.name)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and depth > 0 and node.value.strip():
            cell = _in_cell(cells, node.value)  # any string that is Python: one-line notebook cells too
            found += [f"{cell}{finding}" for finding in _fused_uses(node.value, depth - 1, deadline)]
    return found


def _is_fused(name: str) -> bool:
    return (
        name in FUSED_NAMES
        or name in PYTHON_ATTENTION
        or name.startswith("_scaled_dot_product")
        or "flash_attention" in name
    )


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement names: ``import a.b`` -> a.b; ``from a import b`` -> a and a.b."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level or not node.module:
        return []
    return [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]


# Names that reach around the assignment or the grader: torch's dispatch internals (which can switch
# the op record off), the worker's own modules, and the runtime's import and frame machinery.
REACH_NAMES = (
    "_C",
    "DisableTorchFunction",
    "DisableTorchFunctionSubclass",
    "_disable_current_modes",
    "_disable_torch_function",
    "_get_current_dispatch_mode",
    "_pop_mode",
    "_pop_torch_function_stack",
    "modules",
    "_getframe",
    "__main__",
    "__builtins__",
    "__import__",
    "import_module",
    "get_objects",
)
_DYNAMIC_CALLS = ("getattr", "__import__", "import_module", "attrgetter", "eval", "exec", "compile")


def dynamic_reach(source: str, depth: int = 3) -> list[str]:
    """Places where the source reaches torch internals, the worker, or names it builds at run time.

    Flags ``getattr``, ``__import__``, ``importlib.import_module``, ``operator.attrgetter``,
    ``eval``, ``exec`` and ``compile`` given a name that is not a plain string constant (built
    with ``+``, f-strings, ``chr()``, ``join``, a variable, ...), or a constant that names
    something fused or internal; any use of ``torch._C``, ``DisableTorchFunction``,
    ``_disable_current_modes``, ``torch.ops.aten``, ``sys.modules``, ``__main__`` or importlib;
    and a string constant that names fused attention. Strings that are themselves Python (a
    notebook's cells, one-liners included, or code given to exec) are searched ``depth`` deep.
    Python nested too deeply to parse, or a scan past SCAN_SECONDS, is itself a finding.
    """
    try:
        _scanning(source)
        return _dynamic_reach(source, depth, time.monotonic() + SCAN_SECONDS, _cell_numbers(source))
    except _Unscannable as why:
        return [str(why)]


def _dynamic_reach(source: str, depth: int, deadline: float, cells: dict[str, int] | None = None) -> list[str]:
    tree = _tree(source, deadline)
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Call) and _call_name(node.func) in _DYNAMIC_CALLS:
            name = _call_name(node.func)
            argument = (
                node.args[1] if name == "getattr" and len(node.args) > 1 else (node.args[0] if node.args else None)
            )
            if argument is None:
                continue
            if _is_compiled_constant(argument) or (name in ("eval", "exec", "compile") and _is_str(argument)):
                continue  # code given as a constant is scanned below, as a string that is Python
            if not _is_str(argument):
                found.append(f"{where}: {name}() with a name built at run time")
            elif _is_fused(argument.value) or argument.value in REACH_NAMES or argument.value.startswith("_"):
                found.append(f"{where}: {name}() of {argument.value!r}")
        elif isinstance(node, ast.Attribute) and node.attr in REACH_NAMES:
            if node.attr != "modules" or _call_name(node.value) == "sys":
                found.append(f"{where}: .{node.attr}")
        elif isinstance(node, ast.Attribute) and node.attr == "aten" and _call_name(node.value) == "ops":
            found.append(f"{where}: torch.ops.aten")
        elif isinstance(node, ast.Name) and node.id in ("DisableTorchFunction", "_disable_current_modes", "__import__"):
            found.append(f"{where}: {node.id}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
            if any(m.split(".")[0] in ("importlib", "__main__") or m.startswith("torch._") for m in modules):
                found.append(f"{where}: import of {', '.join(modules)}")
            found += [f"{where}: import of {n}" for n in names if n in REACH_NAMES]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _is_fused(node.value.strip()) or node.value.strip() in (
                "DisableTorchFunction",
                "_disable_current_modes",
            ):
                found.append(f"{where}: the string {node.value.strip()!r}")
            elif depth > 0 and node.value.strip():
                inner = _dynamic_reach(node.value, depth - 1, deadline)
                within = _in_cell(cells, node.value) or f"{where}, in code given as a string: "
                found += [f"{within}{finding}" for finding in inner]
    return found


def _call_name(func: ast.expr) -> str:
    """The last name of a called or owning expression: ``getattr``, ``importlib.import_module`` -> import_module."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _is_str(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _is_compiled_constant(node: ast.expr) -> bool:
    """``compile("<constant code>", ...)``: how notebook cells are run; the constant is scanned as code."""
    return (
        isinstance(node, ast.Call) and _call_name(node.func) == "compile" and bool(node.args) and _is_str(node.args[0])
    )


# Modules of the grader a submission has no business importing: the reference, the package, the sandbox's (the
# worker's own among them: sandbox/student_side/, top-level modules beside the student)
GRADER_MODULES = frozenset(
    {"reference", "autograder"} | {p.stem for p in (Path(__file__).parents[1] / "sandbox").rglob("*.py")} - {"__init__"}
)
# calls that write, move or delete files, by their last name (``os.remove``, ``shutil.copy``, ``torch.save``,
# a Path's ...)
WRITING_CALLS = frozenset({
    "write_text", "write_bytes", "touch", "save", "savez", "savez_compressed", "savetxt", "remove", "unlink", "rename",
    "replace", "rmtree", "copy", "copy2", "copyfile", "copytree", "move", "makedirs", "mkdir", "rmdir", "truncate",
    "symlink", "link", "mkfifo",
})  # fmt: skip
# the owners those names must be called on to count (``os.replace`` writes; ``text.replace`` does not)
_WRITING_OWNERS = {
    "replace": ("os",),
    "rename": ("os",),
    "remove": ("os",),
    "copy": ("shutil",),
    "move": ("shutil",),
    "save": ("torch", "np", "numpy"),
    "link": ("os",),
    "truncate": ("os",),
}
_WRITE_MODE = re.compile(r"[wax+]")
TAMPERING_KINDS = ("patches_torch", "imports_grader", "writes_files", "builds_code")  # in the order they are told


def tampering(source: str, depth: int = 3) -> dict[str, list[str]]:
    """What an attack leaves in the source, by kind (keys of flags.REASONS), each with its places.

    ``patches_torch``: an assignment, ``setattr`` or ``delattr`` that replaces something callable of torch
    (``torch.allclose = ...``, ``F.softmax = ...``, ``torch.Tensor.__eq__ = ...``); a setting such as
    ``torch.backends.cudnn.deterministic = True`` is no patch. ``imports_grader``: an import of the
    reference, this package or the worker's modules. ``writes_files``: ``open`` with a write mode, and
    the calls that write, move or delete files. ``builds_code``: an interpreter object, code or functions made from
    parts, marshal, ctypes (``_builds_code``). Code in strings (a notebook's cells) is searched too.
    A source too deep or too slow to scan is ``dynamic_reach``'s finding: nothing here.
    """
    try:
        _scanning(source)
        return _tampering(source, depth, time.monotonic() + SCAN_SECONDS, _cell_numbers(source))
    except (_Unscannable, RecursionError):
        return {}


def _tampering(source: str, depth: int, deadline: float, cells: dict[str, int] | None = None) -> dict[str, list[str]]:
    tree = _tree(source, deadline)
    if tree is None:
        return {}
    aliases = _torch_aliases(tree)
    found: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        where = f"line {getattr(node, 'lineno', '?')}"
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        elif isinstance(node, ast.Call) and _call_name(node.func) in ("setattr", "delattr") and len(node.args) >= 2:
            if _is_str(node.args[1]):
                targets = [ast.Attribute(value=node.args[0], attr=node.args[1].value)]
        for target in targets:
            path = _torch_path(target, aliases)
            if path and _is_callable_in_torch(path):
                found.setdefault("patches_torch", []).append(f"{where}: {path}")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if isinstance(node, ast.ImportFrom) and node.level:
                continue  # a relative import: the submission's own package, not ours
            found.setdefault("imports_grader", []).extend(
                f"{where}: import of {m}" for m in modules if m.split(".")[0] in GRADER_MODULES
            )
        elif isinstance(node, ast.Call) and _writes(node):
            found.setdefault("writes_files", []).append(f"{where}: {ast.unparse(node.func)}()")
        if builds := _builds_code(node):
            found.setdefault("builds_code", []).append(f"{where}: {builds}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and depth > 0 and node.value.strip():
            try:
                inner = _tampering(node.value, depth - 1, deadline)
            except _Unscannable:  # a string too deep, or no time left: dynamic_reach flags the source
                continue
            within = _in_cell(cells, node.value) or f"{where}, in code given as a string: "
            for key, places in inner.items():
                found.setdefault(key, []).extend(f"{within}{place}" for place in places)
    return {key: found[key] for key in TAMPERING_KINDS if found.get(key)}


def _torch_aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> the torch module or object it stands for (``F`` -> ``torch.nn.functional``)."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "torch":
                    aliases[alias.asname or "torch"] = alias.name if alias.asname else "torch"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch" and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _torch_path(target: ast.expr, aliases: dict[str, str]) -> str:
    """``torch.nn.functional.softmax`` for an attribute target rooted at a name bound to torch, else ''."""
    names = []
    while isinstance(target, ast.Attribute):
        names.append(target.attr)
        target = target.value
    if not names or not isinstance(target, ast.Name) or target.id not in aliases:
        return ""
    return ".".join([aliases[target.id], *reversed(names)])


def _is_callable_in_torch(path: str) -> bool:
    """Whether ``path`` names something callable in the torch this grader runs (what a patch would replace)."""
    import importlib

    import torch

    thing: object = torch
    for name in path.split(".")[1:]:
        try:
            thing = getattr(thing, name)
        except Exception:  # noqa: BLE001 - a name torch does not have: adding one replaces nothing
            try:
                thing = importlib.import_module(f"{getattr(thing, '__name__', '')}.{name}")
            except Exception:  # noqa: BLE001
                return False
    return callable(thing)


def _writes(call: ast.Call) -> bool:
    """``open(path, "w")`` and its kin (a constant write mode), or a call that writes, moves or deletes files."""
    name = _call_name(call.func)
    if name == "open":
        mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
        if isinstance(call.func, ast.Attribute) and call.args and _is_str(call.args[0]) and mode is None:
            mode = call.args[0]  # Path(...).open("w")
        return mode is not None and _is_str(mode) and bool(_WRITE_MODE.search(mode.value))
    if name not in WRITING_CALLS or not isinstance(call.func, ast.Attribute):
        return False
    owners = _WRITING_OWNERS.get(name)
    return owners is None or _call_name(call.func.value) in owners


# Code built or run at run time, and native memory: the worker refuses them (blocking._guard_code), and their names
# in the source are evidence for the instructor. exec, eval and compile given a name built at run time are
# dynamic_reach's; compile of constant code (a notebook's cells) is neither.
CODE_MODULES = frozenset({"code", "codeop", "runpy", "marshal", "ctypes"})
CODE_NAMES = frozenset({
    "InteractiveInterpreter", "InteractiveConsole", "runsource", "runcode", "compile_command", "CodeType",
    "FunctionType", "__code__", "ctypes", "pythonapi", "memmove", "memset",
})  # fmt: skip


def _builds_code(node: ast.AST) -> str:
    """What ``node`` uses to build or run code at run time, or to reach native memory ('' for nothing)."""
    if isinstance(node, ast.Import):
        return ", ".join(f"import of {a.name}" for a in node.names if a.name.split(".")[0] in CODE_MODULES)
    if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in CODE_MODULES:
        return f"import of {node.module}"
    if isinstance(node, ast.ImportFrom):
        return ", ".join(f"import of {a.name}" for a in node.names if a.name in CODE_NAMES)
    if isinstance(node, ast.Attribute) and node.attr in CODE_NAMES:
        return f".{node.attr}"
    if isinstance(node, ast.Name) and node.id in CODE_NAMES:
        return node.id
    return ""
