"""The static integrity scan: fused attention, dynamic reach into torch internals,
and what an attack leaves, in the source."""

from __future__ import annotations

import json

import pytest

from autograder.checks.integrity import dynamic_reach, fused_uses, tampering
from autograder.read.submission import notebook_source
from tests.helpers import REFERENCE, ROOT, SUBMISSIONS


@pytest.mark.parametrize(
    "code",
    [
        'f = getattr(torch.nn.functional, "scaled_" + "dot_product_attention")',
        'f = getattr(F, "".join(["scaled_dot", "_product_attention"]))',
        "f = getattr(F, f\"scaled_{'dot_product'}_attention\")",
        'f = getattr(F, "scaled_dot_product_attention")',
        'f = vars(F)["scaled_dot_product_attention"]',
        'm = __import__("torch").nn.functional',
        'import importlib\nm = importlib.import_module("torch.nn.functional")',
        "with torch._C.DisableTorchFunction():\n    pass",
        "from torch._C import _disable_current_modes",
        "from torch.utils._python_dispatch import _disable_current_modes",
        "out = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(Q, K, V)",
        "import sys\nhandler = sys.modules['__main__']._call",
        "exec(\"y = getattr(F, 'scaled_' + 'dot_product_attention')\")",
        'exec("import torch" + suffix)',
        "exec(open(path).read(), space)",
    ],
)
def test_dynamic_reach_is_flagged(code):
    """getattr / __import__ / importlib given a name known without running (constants, joined or not) that names
    something fused or internal, exec of code built at run time, torch._C and the mode switches are found, and cost
    the check."""
    assert dynamic_reach(code), code
    assert dynamic_reach(code, weak=True) == [], code


@pytest.mark.parametrize(
    "code",
    [
        'f = getattr(F, chr(115) + "caled_dot_product_attention")',
        "name = 'x'\nf = getattr(F, name)",
        'f = getattr(F, f"scaled_{kind}_attention")',
        "for name in ('w_q', 'w_k'):\n    getattr(self, name).reset_parameters()",
    ],
)
def test_names_built_at_run_time_are_for_review_only(code):
    """A name that depends on a value (getattr over the projections' names, a built name): shown for review, no
    deduction (the op record decides whether anything forbidden ran)."""
    assert dynamic_reach(code) == [], code
    assert dynamic_reach(code, weak=True), code


@pytest.mark.parametrize(
    "code",
    [
        '"""See torch.nn.functional.scaled_dot_product_attention."""',
        'def f():\n    """torch.nn.functional.scaled_dot_product_attention"""',
        '__all__ = ["scaled_dot_product_attention", "MultiHeadAttention"]',
        "# F.scaled_dot_product_attention(Q, K, V) would do it in one call",
        'message = "do not call F.scaled_dot_product_attention"',
        'if __name__ == "__main__":\n    import torch.nn.functional as F\n    F.scaled_dot_product_attention(q, k, v)',
        'if "__main__" == __name__:\n    torch.allclose = None\n    open("x", "w")',
    ],
)
def test_mention_is_not_use(code):
    """A name in a docstring, a comment, __all__, a string never run, or a block that never runs while graded
    (``if __name__ == "__main__":``) is not use: no finding of any kind."""
    assert fused_uses(code) == [] and dynamic_reach(code) == [] and tampering(code) == {}, code
    assert dynamic_reach(code, weak=True) == [], code


def test_main_blocks_else_is_scanned():
    """The ``else`` of an ``if __name__ == "__main__":`` block runs when graded: it is scanned."""
    code = 'if __name__ == "__main__":\n    pass\nelse:\n    def f(q):\n        return F.scaled_dot_product_attention()'
    assert fused_uses(code) == ["line 5: .scaled_dot_product_attention"]


def test_top_level_code_is_not_the_graded_function():
    """A fused name at the top level of the file or a cell (a scratch comparison, run once as the file loads) is not
    the graded functions' code: no finding; in a function, a lambda or a class it is one; an import of it is one."""
    top = "import torch.nn.functional as F\nprint(F.scaled_dot_product_attention(q, k, v).shape)\n"
    assert fused_uses(top) == []
    assert fused_uses(top + "class A:\n    run = F.scaled_dot_product_attention\n") == [
        "line 4: .scaled_dot_product_attention"
    ]
    assert fused_uses("from torch.nn.functional import scaled_dot_product_attention") == [
        "line 1: import of scaled_dot_product_attention"
    ]


def test_honest_sources_are_not_flagged():
    """The reference and every honest or unrelated submission under tests/submissions pass the scan."""
    flagged = {
        "cheat_fused_getattr",
        "attack_blockwise_unmeasured",  # takes the grader's dispatch modes off torch's stack (torch._C)
        "cheat_patch_handler",
        "cheat_mutation_after_copies",
        "cheat_fused_record_off",
        "wire_bomb_reply",
        "wire_unhashable_reply",  # patches the worker's copy of wire.py, found in sys.modules
        "late_answers",  # the time attacks (tests/submissions/time/) patch the worker's wire.py too
        "trickle_after_first_byte",
        "shrink_shared_memory",
        "trickle_reply",
        "steal_reference",  # exec()s a file it found at run time
        "forged_empty_gradients",
        "forged_markers",
        "steal_everything",
    }  # the notebook attack reaches for the grader by every route it knows
    for path in [REFERENCE, *sorted(SUBMISSIONS.glob("*/*.py"))]:
        if path.stem not in flagged:
            assert dynamic_reach(path.read_text()) == [], path.name


def test_one_line_notebook_cell_is_scanned(tmp_path):
    """A fused call in a one-line notebook cell's function is found in the source the grader reads from the
    notebook, cited by its cell; the same call in a scratch cell's top level is not the graded function."""
    sources = ["attend = lambda Q, K, V: F.scaled_dot_product_attention(Q, K, V)",
               "print((attend(Q, K, V) - F.scaled_dot_product_attention(Q, K, V)).abs().max())"]  # fmt: skip
    cells = [{"cell_type": "code", "metadata": {}, "source": source} for source in sources]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    source = notebook_source(json.dumps(notebook))
    assert fused_uses(source) == ["cell 1, line 1: .scaled_dot_product_attention"]
    assert dynamic_reach(source) == []  # the grader's own wrapper (exec of a constant cell) is not a flag


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("import torch\ntorch.allclose = lambda *a, **k: True", "patches_torch"),
        ("import torch.nn.functional as F\nF.softmax = None", "patches_torch"),
        ("from torch import nn\nnn.functional.softmax = None", "patches_torch"),
        ("import torch\nsetattr(torch, 'equal', lambda *a: True)", "patches_torch"),
        ("import torch\ntorch.Tensor.__eq__ = lambda a, b: True", "patches_torch"),
        ("import torch.testing\ntorch.testing.assert_close = print", "patches_torch"),
        ("from reference.attention import scale_scores", "imports_grader"),
        ("import autograder.checks", "imports_grader"),
        ("import wire", "imports_grader"),
        ("with open('results.json', 'w') as f:\n    f.write('{}')", "writes_files"),
        ("open('log.txt', mode='a')", "writes_files"),
        ("import pathlib\npathlib.Path('x').write_text('y')", "writes_files"),
        ("import torch\ntorch.save({}, 'model.pt')", "writes_files"),
        ("import os\nos.remove('x')", "writes_files"),
        ('exec(compile("import torch\\ntorch.equal = None", "cell1/attention.py", "exec"))', "patches_torch"),
    ],
)
def test_what_an_attack_leaves_in_the_source_is_found(code, kind):
    """Patching torch's functions, importing the grader, writing files: each found, by kind, with its line."""
    found = tampering(code)
    assert kind in found and all("line " in place for place in found[kind]), found


@pytest.mark.parametrize(
    "code",
    [
        "import torch\ntorch.backends.cudnn.deterministic = True",  # a setting, not a function
        "import torch\ntorch.manual_seed(0)",
        "with open('notes.txt') as f:\n    text = f.read()",
        "name = 'a-b'.replace('-', '_')\nitems = [1]\nitems.remove(1)",
        "import copy\nx = copy.copy([1])",
        "from torch import allclose\nallclose = None",  # a name of its own, torch untouched
    ],
)
def test_ordinary_code_is_no_tampering(code):
    """Settings, reading a file, str.replace, list.remove, rebinding a name of one's own: nothing found."""
    assert tampering(code) == {}, code


def test_honest_sources_leave_no_tampering():
    """The reference and every correct, mistaken or edge-case submission under tests/submissions are not flagged."""
    attacks = {"mistake_mutation_hidden"}  # patches torch.equal besides its mistake: flagged (tests/grading_cases.py)
    for path in [REFERENCE, *sorted(SUBMISSIONS.glob("overlays/*.py"))]:
        honest = (
            path.stem.startswith(("correct_", "mistake_", "edge_", "misattr_", "precision_"))
            and path.stem not in attacks
        )
        if honest or path == REFERENCE:
            assert tampering(path.read_text()) == {}, path.name


def test_mallory_leaves_all_three_kinds():
    """The example class's hostile student patches torch, imports the reference and writes a results file."""
    found = tampering((ROOT / "examples" / "class" / "mallory.py").read_text())
    assert set(found) == {"patches_torch", "imports_grader", "writes_files"}, found


@pytest.mark.parametrize(
    "inner", ["x = " + "-" * 5000 + "1", "x = a" + ".b" * 100000, "x = " + "lambda: " * 50000 + "1"]
)
def test_code_too_deep_to_scan_is_a_finding_not_a_crash(inner):
    """Python too deeply nested for the parser, inside a string given to exec, is flagged; the scan never raises."""
    source = f"exec({inner!r})\n"
    assert dynamic_reach(source) == ["code nested too deeply to scan"]
    assert fused_uses(source) == []


@pytest.mark.parametrize("inner", ["x = " + "-" * 5000 + "1", "x = " + "lambda: " * 50000 + "1"])
def test_tampering_scan_of_code_too_deep_is_empty_not_a_crash(inner):
    """The attack-trace scan meets the same deep sources: it finds nothing there and never raises."""
    assert tampering(f"import torch\ntorch.equal = None\nexec({inner!r})\n") == {
        "patches_torch": ["line 2: torch.equal"]
    }
