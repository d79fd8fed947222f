"""Fused attention in a submission: found in its source, and in the ops its calls ran."""

from __future__ import annotations

import ast
import re
import time
from pathlib import Path

from autograder.sandbox.student_side.blocking import PYTHON_ATTENTION

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
# torch's own attention written in Python: the functions (the sandbox refuses them: blocking._block_fused), and the
# modules that hold them
ATTENTION_MODULES = ("torch.onnx", "torch.nn.attention.flex_attention", "torch._higher_order_ops.flex_attention")


def fused_uses(source: str, depth: int = 3) -> list[str]:
    """Places where the source reaches for PyTorch's fused attention (``F.scaled_dot_product_attention``, ...) or its
    attention written in Python (``torch.onnx.ops.attention``, flex attention's ``math_attention``, ...): a name of
    it in the code of a function or a class (``_in_definitions``), and its imports anywhere.

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
    code, defined = _code_strings(tree), _in_definitions(tree)
    for node in _walk(tree):
        if isinstance(node, ast.Attribute) and (
            _is_fused(node.attr) or (node.attr == "attention" and _call_name(node.value) == "ops")
        ):
            owner = node.value
            if id(node) in defined and not (isinstance(owner, ast.Name) and owner.id == "self"):
                found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and (
            modules := [m for m in _imported(node) if m.startswith(ATTENTION_MODULES)]
        ):
            found.append(f"line {node.lineno}: import of {modules[0]}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch"):
            found += [f"line {node.lineno}: import of {alias.name}" for alias in node.names if _is_fused(alias.name)]
        elif id(node) in code and depth > 0 and node.value.strip():
            cell = _in_cell(cells, node.value) or f"line {node.lineno}, in code given as a string: "
            found += [f"{cell}{finding}" for finding in _fused_uses(node.value, depth - 1, deadline)]
    return found


def _walk(tree: ast.AST):
    """Every node of ``tree`` but those of a block that never runs while graded (``if __name__ == "__main__":``,
    whose body runs only when the file is run as a script); its ``else`` is walked."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and _is_main_test(node.test):
            todo.extend(reversed(node.orelse))
            todo.append(node.test)
        else:
            todo.extend(reversed(list(ast.iter_child_nodes(node))))


def _is_main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = (test.left, test.comparators[0])
    return any(isinstance(a, ast.Name) and a.id == "__name__" for a in sides) and any(
        _is_str(b) and b.value == "__main__" for b in sides
    )


def _in_definitions(tree: ast.AST) -> set[int]:
    """The nodes inside a function, a lambda or a class: the code the graded functions can run. What stands at the top
    level of the file or of a notebook's cell (a scratch cell comparing the output with PyTorch's) runs once, as the
    file loads, and is not the graded function: what the graded functions ran is the op record's to say."""
    inside: set[int] = set()
    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    for node in _walk(tree):
        if isinstance(node, definitions) and id(node) not in inside:
            inside.update(id(part) for part in _walk(node))
    return inside


def _code_strings(tree: ast.AST) -> set[int]:
    """The string constants of ``tree`` that are code when the file runs: the first argument of ``exec``, ``eval``
    and ``compile`` (a notebook's cells are compiled so). Any other string (a docstring, a comment's kin, ``__all__``,
    a message) is text, not use."""
    return {
        id(node.args[0])
        for node in _walk(tree)
        if isinstance(node, ast.Call)
        and _call_name(node.func) in ("exec", "eval", "compile")
        and node.args
        and _is_str(node.args[0])
    }


def _folded(node: ast.expr) -> str | None:
    """The text of a name built from string constants alone (``"scaled_" + "dot_product"``, an f-string of
    constants, ``"".join([...constants])``): known without running anything; None where it depends on a value."""
    if _is_str(node):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.FormattedValue) and node.conversion == -1 and node.format_spec is None:
        return _folded(node.value)
    if isinstance(node, ast.JoinedStr):
        parts = [_folded(value) for value in node.values]
        return None if None in parts else "".join(parts)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and _is_str(node.func.value)
        and len(node.args) == 1
        and isinstance(node.args[0], (ast.List, ast.Tuple))
    ):
        parts = [_folded(value) for value in node.args[0].elts]
        return None if None in parts else node.func.value.value.join(parts)
    return None


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


def dynamic_reach(source: str, depth: int = 3, weak: bool = False) -> list[str]:
    """Places where the source reaches torch internals, the worker, or fused attention by a name.

    Strong (the default): ``getattr``, ``__import__``, ``importlib.import_module``, ``operator.attrgetter``,
    ``eval``, ``exec`` and ``compile`` given a name known without running anything (a constant, or constants joined)
    that names something fused or internal, and a subscript by such a name (``vars(F)["scaled_dot_product_..."]``);
    any use of ``torch._C``, ``DisableTorchFunction``, ``_disable_current_modes``, ``torch.ops.aten``,
    ``sys.modules``, ``__main__`` or importlib. Python nested too deeply to parse, or a scan past SCAN_SECONDS, is
    itself a finding, and so is ``exec``, ``eval`` or ``compile`` of code built at run time. ``weak=True``: the
    places where the lookups are given a name that depends on a value (``getattr(self, name)`` in a loop): evidence
    for the instructor's review, never a deduction.

    Only what runs while graded counts: a string is text (a docstring, ``__all__``, a message) unless it is code given
    to exec/eval/compile (a notebook's cells), searched ``depth`` deep; an ``if __name__ == "__main__":`` block is
    never run by the grader.
    """
    try:
        _scanning(source)
        found = _dynamic_reach(source, depth, time.monotonic() + SCAN_SECONDS, _cell_numbers(source))
    except _Unscannable as why:
        return [] if weak else [str(why)]
    return [place for is_weak, place in found if is_weak == weak]


def _dynamic_reach(
    source: str, depth: int, deadline: float, cells: dict[str, int] | None = None
) -> list[tuple[bool, str]]:
    """(weak, place) for each finding (``dynamic_reach``)."""
    tree = _tree(source, deadline)
    if tree is None:
        return []
    found: list[tuple[bool, str]] = []
    code = _code_strings(tree)
    for node in _walk(tree):
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
            known = _folded(argument)
            if known is None and name in ("eval", "exec", "compile"):  # code of its own, which the guard refuses
                found.append((False, f"{where}: {name}() of code built at run time"))
            elif known is None:
                found.append((True, f"{where}: {name}() with a name built at run time"))
            elif _reaches(known):
                built = "" if _is_str(argument) else " (a name built at run time)"
                found.append((False, f"{where}: {name}() of {known!r}{built}"))
        elif isinstance(node, ast.Subscript) and (known := _folded(node.slice)) is not None and _is_fused(known):
            found.append((False, f"{where}: [{known!r}]"))
        elif isinstance(node, ast.Attribute) and node.attr in REACH_NAMES:
            if node.attr != "modules" or _call_name(node.value) == "sys":
                found.append((False, f"{where}: .{node.attr}"))
        elif isinstance(node, ast.Attribute) and node.attr == "aten" and _call_name(node.value) == "ops":
            found.append((False, f"{where}: torch.ops.aten"))
        elif isinstance(node, ast.Name) and node.id in ("DisableTorchFunction", "_disable_current_modes", "__import__"):
            found.append((False, f"{where}: {node.id}"))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
            if any(m.split(".")[0] in ("importlib", "__main__") or m.startswith("torch._") for m in modules):
                found.append((False, f"{where}: import of {', '.join(modules)}"))
            found += [(False, f"{where}: import of {n}") for n in names if n in REACH_NAMES]
        elif id(node) in code and depth > 0 and node.value.strip():
            inner = _dynamic_reach(node.value, depth - 1, deadline)
            within = _in_cell(cells, node.value) or f"{where}, in code given as a string: "
            found += [(is_weak, f"{within}{finding}") for is_weak, finding in inner]
    return found


def _reaches(name: str) -> bool:
    """Whether a name given to getattr and its kin names something fused or internal."""
    return _is_fused(name) or name in REACH_NAMES or name.startswith("_")


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
    code = _code_strings(tree)
    for node in _walk(tree):
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
        elif id(node) in code and depth > 0 and node.value.strip():
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
