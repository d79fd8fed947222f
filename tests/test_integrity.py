"""The static integrity scan: fused attention and dynamic reach into torch internals, found in the source."""

from __future__ import annotations

import json

import pytest

from autograder.checks.integrity import dynamic_reach, fused_uses
from autograder.submission import notebook_source
from tests.helpers import REFERENCE, SUBMISSIONS


@pytest.mark.parametrize(
    "code",
    [
        'f = getattr(torch.nn.functional, "scaled_" + "dot_product_attention")',
        'f = getattr(F, "".join(["scaled_dot", "_product_attention"]))',
        'f = getattr(F, chr(115) + "caled_dot_product_attention")',
        "name = 'x'\nf = getattr(F, name)",
        'f = getattr(F, f"scaled_{kind}_attention")',
        'f = getattr(F, "scaled_dot_product_attention")',
        'm = __import__("torch").nn.functional',
        'import importlib\nm = importlib.import_module("torch.nn.functional")',
        "with torch._C.DisableTorchFunction():\n    pass",
        "from torch._C import _disable_current_modes",
        "from torch.utils._python_dispatch import _disable_current_modes",
        "out = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(Q, K, V)",
        "import sys\nhandler = sys.modules['__main__']._call",
        'exec("import torch" + ".nn")',
        'exec("y = getattr(F, \'scaled_\' + \'dot_product_attention\')")',
    ],
)
def test_dynamic_reach_is_flagged(code):
    """getattr / __import__ / importlib / exec with built names, torch._C and the mode switches are found."""
    assert dynamic_reach(code), code


def test_honest_sources_are_not_flagged():
    """The reference and every honest or unrelated submission under tests/submissions pass the scan."""
    flagged = {"cheat_fused_getattr", "cheat_patch_handler", "cheat_mutation_after_copies", "cheat_fused_record_off",
               "wire_bomb_reply", "steal_reference",  # steal_reference exec()s a file it found at run time
               "shrink_shared_memory", "trickle_reply", "forged_empty_gradients", "forged_markers", "scan_bomb"}
    for path in [REFERENCE, *sorted(SUBMISSIONS.glob("*/*.py"))]:
        if path.stem not in flagged:
            assert dynamic_reach(path.read_text()) == [], path.name


def test_one_line_notebook_cell_is_scanned(tmp_path):
    """A fused call in a one-line notebook cell is found in the source the grader reads from the notebook."""
    cell = {"cell_type": "code", "metadata": {}, "source": "out = F.scaled_dot_product_attention(Q, K, V)"}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    source = notebook_source(json.dumps(notebook))
    assert fused_uses(source)
    assert dynamic_reach(source) == []  # the grader's own wrapper (exec of a constant cell) is not a flag


@pytest.mark.parametrize("inner", ["x = " + "-" * 5000 + "1", "x = a" + ".b" * 100000, "x = " + "lambda: " * 50000 + "1"])
def test_code_too_deep_to_scan_is_a_finding_not_a_crash(inner):
    """Python too deeply nested for the parser, inside a string constant, is flagged; the scan never raises."""
    source = f"NOTE = {inner!r}\n"
    assert dynamic_reach(source) == ["code nested too deeply to scan"]
    assert fused_uses(source) == []
