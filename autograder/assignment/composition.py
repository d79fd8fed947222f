"""How the reference composes the assignment's functions, read from its source without running it: the functions
in their order, and which of them each one calls. The student's conftest ("work on this next, it builds on
these"), the released notebook and the grader's carried causes (checks/substitution.py) all read it here, so that a
function added to the reference is followed everywhere without a list kept by hand."""

from __future__ import annotations

import ast


def _public(tree: ast.Module) -> list[ast.FunctionDef | ast.ClassDef]:
    return [
        node
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")
    ]


def functions(source: str) -> list[str]:
    """The public functions and classes of the reference's ``source``, in the order it defines them."""
    return [node.name for node in _public(ast.parse(source))]


def calls(source: str) -> dict[str, tuple[str, ...]]:
    """Each public function or class of ``source`` (a class: its methods) -> the other functions of ``source`` it
    calls, in the order Python evaluates the calls (a call's arguments before the call); () for none."""
    nodes = _public(ast.parse(source))
    names = {node.name for node in nodes}
    return {node.name: _called(node, names - {node.name}) for node in nodes}


def _called(node: ast.AST, names: set[str], found: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The calls of ``names`` within ``node``, in evaluation order (post-order: arguments first), each once."""
    for child in ast.iter_child_nodes(node):
        found = _called(child, names, found)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
        if node.func.id not in found:
            found += (node.func.id,)
    return found
