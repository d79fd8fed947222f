"""Fused attention in a submission: found in its source, and in the ops its calls ran."""

from __future__ import annotations

import ast

FUSED_NAMES = ("scaled_dot_product_attention", "MultiheadAttention", "multi_head_attention_forward")


def fused_uses(source: str, depth: int = 3) -> list[str]:
    """Places where the source reaches for PyTorch's fused attention (``F.scaled_dot_product_attention``, ...).

    String literals that are themselves Python (a notebook's cells, code given to exec) are
    searched too, ``depth`` levels deep.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_fused(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id == "self"):
                found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch"):
            found += [f"line {node.lineno}: import of {alias.name}" for alias in node.names if _is_fused(alias.name)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and depth > 0 and "\n" in node.value:
            found += fused_uses(node.value, depth - 1)
    return found


def _is_fused(name: str) -> bool:
    return name in FUSED_NAMES or name.startswith("_scaled_dot_product") or "flash_attention" in name
