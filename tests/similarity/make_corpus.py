"""Write the similarity corpus: independent submissions, and planted copies disguised as students disguise them.

    .venv/bin/python tests/similarity/make_corpus.py          # writes tests/similarity/class/*.py
    .venv/bin/sdpa-grade batch tests/similarity/class --json-dir /tmp/graded --jobs 2
    .venv/bin/python tests/similarity/make_corpus.py --results /tmp/graded   # keeps them in results/, trimmed

Independent students are composed function by function from pools of styles written by different hands (the
grading cases' correct overlays, bench/variants.py's rewrites, and rewrites written here), each student with their
own mix, about half with one classic mistake (the overlays' mistakes; a few common ones made by two or three
students, as in a real class). Half fill in the student template (its docstrings kept), half write a bare file.

Each planted copy ``copy_of_<source>`` is a source file disguised by a fixed, seeded mix of what students do:
identifiers renamed, functions reordered, comments removed or rewritten, the file reformatted, a line split in
two, a dead line added. The corpus is deterministic: rerunning this script writes the same files.
"""

from __future__ import annotations

import ast
import io
import random
import re
import sys
import tokenize
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OVERLAYS = ROOT / "tests" / "submissions" / "overlays"
TEMPLATE = ROOT / "student_template" / "attention.py"
CLASS = HERE / "class"

SCORES = [
    "return Q @ K.transpose(-2, -1)",
    "return torch.matmul(Q, K.transpose(-1, -2))",
    'return torch.einsum("...qd,...kd->...qk", Q, K)',
    "kt = K.mT\nreturn Q @ kt",
    "return torch.matmul(Q, K.swapaxes(-1, -2))",
]
SCALE = [
    "return scores / math.sqrt(d_k)",
    "return scores * (1.0 / math.sqrt(d_k))",
    "return scores / d_k ** 0.5",
    "factor = math.sqrt(float(d_k))\nreturn scores.div(factor)",
    "return scores * d_k ** -0.5",
    "return scores * torch.rsqrt(torch.tensor(float(d_k)))",
]
CAUSAL = [
    "return torch.tril(torch.ones(T_q, T_k, dtype=torch.bool, device=device))",
    "rows = torch.arange(T_q, device=device)[:, None]\ncols = torch.arange(T_k, device=device)[None, :]\n"
    "return cols <= rows",
    "upper = torch.triu(torch.ones(T_q, T_k, dtype=torch.bool, device=device), diagonal=1)\nreturn ~upper",
    "m = torch.ones((T_q, T_k), device=device).tril()\nreturn m.bool()",
    "i = torch.arange(T_q, device=device).unsqueeze(1)\nj = torch.arange(T_k, device=device).unsqueeze(0)\n"
    "return (j - i) <= 0",
]
PADDING = [
    "if valid_lens.dim() == 1:\n    valid_lens = valid_lens[:, None]\n"
    "key_positions = torch.arange(T_k, device=valid_lens.device)\nreturn key_positions < valid_lens[..., None]",
    "lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens\n"
    "return torch.arange(T_k, device=lens.device) < lens.unsqueeze(-1)",
    "lens = valid_lens.reshape(valid_lens.shape[0], -1, 1)\n"
    "idx = torch.arange(T_k, device=valid_lens.device).reshape(1, 1, T_k)\nreturn idx < lens",
    "if valid_lens.ndim == 1:\n    valid_lens = valid_lens.unsqueeze(1)\n"
    "steps = torch.arange(T_k, device=valid_lens.device).expand(*valid_lens.shape, T_k)\n"
    "return steps < valid_lens[..., None]",
    "positions = torch.arange(T_k, device=valid_lens.device)\nif valid_lens.dim() == 1:\n"
    "    return (positions[None, :] < valid_lens[:, None])[:, None, :]\n"
    "return positions[None, None, :] < valid_lens[:, :, None]",
]
SOFTMAX = [
    "if mask is None:\n    return torch.softmax(scores, dim=-1)\nscores = scores.masked_fill(~mask, float('-inf'))\n"
    "row_max = scores.amax(dim=-1, keepdim=True)\n"
    "row_max = row_max.masked_fill(row_max == float('-inf'), 0.0).detach()\nexp = torch.exp(scores - row_max)\n"
    "total = exp.sum(dim=-1, keepdim=True)\ntotal = torch.where(total > 0, total, torch.ones_like(total))\n"
    "return exp / total",
    "if mask is None:\n    return torch.softmax(scores, dim=-1)\n"
    "filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
    "return torch.softmax(filled, dim=-1) * mask",
    "if mask is None:\n    mask = torch.ones_like(scores, dtype=torch.bool)\n"
    "mask = mask.expand_as(scores) if mask.dim() <= scores.dim() else mask\n"
    "shifted = scores - scores.masked_fill(~mask, float('-inf')).amax(dim=-1, keepdim=True)"
    ".nan_to_num(0.0, neginf=0.0).detach()\n"
    "exp = torch.where(mask, shifted.exp(), torch.zeros_like(shifted))\n"
    "return exp / exp.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(exp.dtype).tiny)",
    "drop = None if mask is None else ~mask\nif drop is not None:\n"
    "    scores = scores.masked_fill(drop, float('-inf'))\n"
    "row_max = scores.amax(dim=-1, keepdim=True)\n"
    "row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max)).detach()\n"
    "exp = torch.exp(scores - row_max)\ntotal = exp.sum(dim=-1, keepdim=True)\n"
    "return exp / torch.where(total > 0, total, torch.ones_like(total))",
    "if mask is not None:\n    scores = scores.masked_fill(~mask, float('-inf'))\n"
    "weights = F.softmax(scores.float(), dim=-1).type_as(scores)\n"
    "return weights.nan_to_num(0.0) if mask is None else torch.where(mask, weights, torch.zeros_like(weights))",
    "if mask is None:\n    mask = torch.ones_like(scores, dtype=torch.bool)\n"
    "neg = torch.tensor(float('-inf'), dtype=scores.dtype, device=scores.device)\n"
    "scores = torch.where(mask, scores, neg)\nbiggest = scores.max(dim=-1, keepdim=True).values\n"
    "biggest = torch.nan_to_num(biggest, neginf=0.0).detach()\nnum = torch.exp(scores - biggest)\n"
    "den = num.sum(-1, keepdim=True)\nreturn num / den.clamp(min=torch.finfo(num.dtype).tiny)",
]
OUTPUT = [
    "return weights @ V",
    "return torch.matmul(weights, V)",
    'return torch.einsum("...qk,...kv->...qv", weights, V)',
    "out = weights.matmul(V)\nreturn out",
]
SDPA = [
    "d_k = Q.size(-1)\nscores = scale_scores(attention_scores(Q, K), d_k)\nif is_causal:\n"
    "    causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)\n"
    "    mask = causal if mask is None else mask & causal\nweights = masked_softmax(scores, mask)\n"
    "return attention_output(weights, V), weights",
    "if is_causal:\n    causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)\n"
    "    mask = causal if mask is None else mask & causal\n"
    "scores = (Q / math.sqrt(Q.size(-1))) @ K.transpose(-2, -1)\nweights = masked_softmax(scores, mask)\n"
    "return weights @ V, weights",
    "scores = attention_scores(Q, K)\nscores = scale_scores(scores, Q.shape[-1])\nif is_causal:\n"
    "    cm = causal_mask(Q.shape[-2], K.shape[-2], device=Q.device)\n    if mask is None:\n        mask = cm\n"
    "    else:\n        mask = mask & cm\nweights = masked_softmax(scores, mask)\n"
    "output = attention_output(weights, V)\nreturn output, weights",
    "d = Q.size(-1)\nif is_causal:\n    c = causal_mask(Q.size(-2), K.size(-2), device=Q.device)\n"
    "    mask = c if mask is None else torch.logical_and(mask, c)\n"
    "w = masked_softmax(scale_scores(attention_scores(Q, K), d), mask)\nreturn attention_output(w, V), w",
    "T_q, T_k = Q.shape[-2], K.shape[-2]\nallowed = mask\nif is_causal:\n"
    "    tri = causal_mask(T_q, T_k, device=Q.device)\n    allowed = tri if allowed is None else (allowed & tri)\n"
    "raw = attention_scores(Q, K)\nattn = masked_softmax(scale_scores(raw, Q.shape[-1]), allowed)\n"
    "return attn @ V, attn",
]
MHA_INIT = [
    "self.w_q = nn.Linear(d_model, d_model, bias=bias)\nself.w_k = nn.Linear(d_model, d_model, bias=bias)\n"
    "self.w_v = nn.Linear(d_model, d_model, bias=bias)\nself.w_o = nn.Linear(d_model, d_model, bias=bias)",
    "for name in ('w_q', 'w_k', 'w_v', 'w_o'):\n    setattr(self, name, nn.Linear(d_model, d_model, bias=bias))",
    "self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model, bias=bias) for _ in range(4))",
    "def make():\n    return nn.Linear(d_model, d_model, bias)\n\nself.w_q = make()\nself.w_k = make()\n"
    "self.w_v = make()\nself.w_o = make()",
]
MHA_FORWARD = [
    "B, T_q, _ = query.shape\nH, d_head = self.num_heads, self.d_head\n"
    "q = self.w_q(query).view(B, T_q, H, d_head).transpose(1, 2)\n"
    "k = self.w_k(key).view(B, -1, H, d_head).transpose(1, 2)\n"
    "v = self.w_v(value).view(B, -1, H, d_head).transpose(1, 2)\nif mask is not None and mask.dim() == 3:\n"
    "    mask = mask.unsqueeze(1)\nout, weights = scaled_dot_product_attention(q, k, v, mask, is_causal)\n"
    "out = out.transpose(1, 2).reshape(B, T_q, self.d_model)\nreturn self.w_o(out), weights",
    "B, Tq, D = query.shape\nTk = key.shape[1]\nH = self.num_heads\n"
    "q = self.w_q(query).reshape(B, Tq, H, -1).permute(0, 2, 1, 3)\n"
    "k = self.w_k(key).reshape(B, Tk, H, -1).permute(0, 2, 1, 3)\n"
    "v = self.w_v(value).reshape(B, Tk, H, -1).permute(0, 2, 1, 3)\nif mask is not None and mask.ndim == 3:\n"
    "    mask = mask[:, None]\nout, w = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)\n"
    "out = out.permute(0, 2, 1, 3).contiguous().view(B, Tq, D)\nreturn self.w_o(out), w",
    "def heads(x):\n    b, t, _ = x.shape\n    return x.view(b, t, self.num_heads, self.d_head).transpose(1, 2)\n\n"
    "q, k, v = heads(self.w_q(query)), heads(self.w_k(key)), heads(self.w_v(value))\n"
    "if mask is not None and mask.dim() == 3:\n    mask = mask.unsqueeze(1)\n"
    "ctx, attn = scaled_dot_product_attention(q, k, v, mask, is_causal)\nb, _, t, _ = ctx.shape\n"
    "ctx = ctx.transpose(1, 2).reshape(b, t, self.d_model)\nreturn self.w_o(ctx), attn",
    "q = self.w_q(query).unflatten(-1, (self.num_heads, self.d_head)).transpose(-3, -2)\n"
    "k = self.w_k(key).unflatten(-1, (self.num_heads, self.d_head)).transpose(-3, -2)\n"
    "v = self.w_v(value).unflatten(-1, (self.num_heads, self.d_head)).transpose(-3, -2)\n"
    "if mask is not None and mask.dim() == 3:\n    mask = mask.unsqueeze(-3)\n"
    "out, weights = scaled_dot_product_attention(q, k, v, mask, is_causal)\n"
    "out = out.transpose(-3, -2).flatten(-2)\nreturn self.w_o(out), weights",
]
VARIANCE = [
    "q = torch.randn(num_samples, d_k, generator=generator)\nk = torch.randn(num_samples, d_k, generator=generator)\n"
    "return (q * k).sum(dim=-1).var().item()",
    "a = torch.randn((num_samples, d_k), generator=generator)\n"
    "b = torch.randn((num_samples, d_k), generator=generator)\n"
    "dots = torch.einsum('nd,nd->n', a, b)\nreturn float(dots.var())",
    "x, y = torch.randn(2, num_samples, d_k, generator=generator)\nreturn torch.var(torch.sum(x * y, dim=1)).item()",
    "samples = [torch.randn(num_samples, d_k, generator=generator) for _ in range(2)]\n"
    "prod = samples[0].mul(samples[1]).sum(1)\nreturn prod.var().item()",
]

SIGNATURES = {
    "attention_scores": ("def attention_scores(Q, K):", SCORES),
    "scale_scores": ("def scale_scores(scores, d_k):", SCALE),
    "causal_mask": ("def causal_mask(T_q, T_k=None, *, device=None):", CAUSAL),
    "padding_mask": ("def padding_mask(valid_lens, T_k):", PADDING),
    "masked_softmax": ("def masked_softmax(scores, mask=None):", SOFTMAX),
    "attention_output": ("def attention_output(weights, V):", OUTPUT),
    "scaled_dot_product_attention": ("def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):", SDPA),
    "dot_product_variance": ("def dot_product_variance(d_k, num_samples=10000, generator=None):", VARIANCE),
}
# Where a mistake goes: ("body", function, body) replaces that function's body; ("overlay", name) appends the
# grading case's overlay (those that wrap the student's own function, or redefine MultiHeadAttention.forward)
MISTAKES = [
    ("body", "scale_scores", "return scores / d_k"),
    ("body", "scale_scores", "return scores / d_k"),
    ("body", "scale_scores", "return scores / d_k"),
    ("body", "scale_scores", "return scores"),
    ("body", "scale_scores", "return scores"),
    ("overlay", "mistake_mask_inverted"),
    ("overlay", "mistake_mask_inverted"),
    (
        "body",
        "masked_softmax",
        "if mask is not None:\n    scores = scores.masked_fill(~mask, float('-inf'))\n"
        "return torch.softmax(scores, dim=-1)",
    ),
    (
        "body",
        "masked_softmax",
        "if mask is not None:\n    scores = scores.masked_fill(~mask, float('-inf'))\n"
        "return torch.softmax(scores, dim=-1)",
    ),
    (
        "body",
        "masked_softmax",
        "weights = torch.softmax(scores, dim=-1)\nreturn weights if mask is None else weights * mask",
    ),
    (
        "body",
        "masked_softmax",
        "if mask is not None:\n    scores = scores.masked_fill(~mask, float('-inf'))\n"
        "return torch.softmax(scores, dim=-2).nan_to_num(0.0)",
    ),
    (
        "body",
        "masked_softmax",
        "if mask is not None:\n"
        "    scores = scores + (1.0 - mask.to(scores.dtype)) * -10000.0\nreturn torch.softmax(scores, dim=-1)",
    ),
    (
        "body",
        "masked_softmax",
        "exp = torch.exp(scores)\nif mask is not None:\n    exp = exp * mask\n"
        "total = exp.sum(dim=-1, keepdim=True)\nreturn exp / torch.where(total > 0, total, torch.ones_like(total))",
    ),
    ("body", "causal_mask", "return torch.ones(T_q, T_k, dtype=torch.bool, device=device).triu()"),
    ("body", "causal_mask", "return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril(diagonal=T_k - T_q)"),
    ("body", "attention_scores", "return Q @ K.transpose(1, 2)"),
    ("overlay", "mistake_mha_split_no_transpose"),
    ("overlay", "mistake_mha_merge_order"),
    ("overlay", "mistake_causal_ignored"),
    ("overlay", "mistake_mutation"),
]
CORRECT = 12  # students 0..11 are correct (as far as their styles are); each of the 20 after them makes one mistake
INDEPENDENT = CORRECT + len(MISTAKES)
# the planted copies' sources: one correct student (a copy of a full-marks file has no behavioural evidence: it is
# not flagged, by design), and every student with a wrong answer
COPIES = [2, *range(CORRECT, INDEPENDENT)]


def _indent(body: str, by: str) -> str:
    return "\n".join(by + line if line else "" for line in body.splitlines())


def _styles(student: int) -> dict[str, int]:
    """Each function's style for this student: a different stride per function, so no two students share many."""
    rng = random.Random(f"student-{student}")
    pools = {**{name: pool for name, (_, pool) in SIGNATURES.items()}, "mha_init": MHA_INIT, "mha_forward": MHA_FORWARD}
    return {name: rng.randrange(len(pool)) for name, pool in pools.items()}


def _mha(init: str, forward: str, bare: bool) -> str:
    if not bare:
        return ""
    return (
        "class MultiHeadAttention(nn.Module):\n    def __init__(self, d_model, num_heads, bias=True):\n"
        "        super().__init__()\n        self.d_model = d_model\n        self.num_heads = num_heads\n"
        f"        self.d_head = d_model // num_heads\n{_indent(init, ' ' * 8)}\n\n"
        f"    def forward(self, query, key, value, mask=None, is_causal=False):\n{_indent(forward, ' ' * 8)}\n"
    )


def independent(student: int) -> str:
    styles = _styles(student)
    mistake = MISTAKES[student - CORRECT] if student >= CORRECT else None
    bodies = {name: pool[styles[name]] for name, (_, pool) in SIGNATURES.items()}
    if mistake and mistake[0] == "body":
        bodies[mistake[1]] = mistake[2]
    init, forward = MHA_INIT[styles["mha_init"]], MHA_FORWARD[styles["mha_forward"]]
    bare = student % 2 == 1
    if bare:
        bodies["causal_mask"] = "if T_k is None:\n    T_k = T_q\n" + bodies["causal_mask"]
        parts = ["import math\n\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n"]
        for name, (signature, _) in SIGNATURES.items():
            if name == "dot_product_variance":
                parts.append(_mha(init, forward, True))
            parts.append(f"{signature}\n{_indent(bodies[name], '    ')}\n")
        text = "\n\n".join(parts)
    else:
        text = TEMPLATE.read_text().replace(
            "from torch import Tensor, nn\n", "import torch.nn.functional as F\nfrom torch import Tensor, nn\n"
        )
        stubs = {**{name: bodies[name] for name in SIGNATURES}, "MultiHeadAttention.__init__": init,
                 "MultiHeadAttention.forward": forward}  # fmt: skip
        for owner, body in stubs.items():
            pattern = re.compile(rf"^( +)# TODO: .*\n +raise NotImplementedError\('{re.escape(owner)} is not", re.M)
            found = pattern.search(text)
            indent = found.group(1)
            end = text.index("\n", found.end())
            text = text[: found.start()] + _indent(body, indent) + text[end:]
    if mistake and mistake[0] == "overlay":
        text += "\n\n" + (OVERLAYS / f"{mistake[1]}.py").read_text()
    return text.rstrip() + "\n"


# --- disguises -------------------------------------------------------------------------------------------------

NEW_NAMES = ["tmp", "res", "val", "mat", "buf", "acc", "arr", "thing", "xx", "yy", "zz", "part", "piece", "item2"]


def rename(text: str, rng: random.Random) -> str:
    """Rename the local variables (never the parameters: the checks pass some by keyword) with tokenize."""
    tree = ast.parse(text)
    params, stored = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            params |= {a.arg for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs}
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stored.add(node.id)
    local = sorted(n for n in stored - params if not n.startswith("_") and n not in {"MultiHeadAttention"})
    names = list(NEW_NAMES)
    rng.shuffle(names)
    mapping = {old: f"{new}_{i}" for i, (old, new) in enumerate(zip(local, names * 3))}
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    lines = text.splitlines(keepends=True)
    previous = None
    edits = []
    for token in tokens:
        if token.type == tokenize.NAME and token.string in mapping and not (previous and previous.string == "."):
            edits.append((token.start, token.end, mapping[token.string]))
        if token.type not in (tokenize.NL, tokenize.COMMENT):
            previous = token
    for (row, col), (_, end), new in reversed(edits):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[end:]
    return "".join(lines)


def reorder(text: str, rng: random.Random) -> str:
    """Shuffle the top-level functions and classes (what an overlay appends stays last: it wraps what is above)."""
    tree = ast.parse(text)
    lines = text.splitlines()
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    first_tail = next((i for i, n in enumerate(tree.body) if isinstance(n, ast.Assign)), len(tree.body))
    movable = [n for n in defs if tree.body.index(n) < first_tail]
    if len(movable) < 2:
        return text
    start = movable[0].lineno - 1
    end = movable[-1].end_lineno
    chunks = ["\n".join(lines[n.lineno - 1 : n.end_lineno]) for n in movable]
    rng.shuffle(chunks)
    return "\n".join(lines[:start] + "\n\n\n".join(chunks).splitlines() + lines[end:]) + "\n"


def comments(text: str, rng: random.Random) -> str:
    """Remove every comment, and write a few new ones."""
    out = []
    for line in text.splitlines():
        code = line.split("  #")[0].rstrip() if "  #" in line and "'" not in line.split("  #")[1] else line
        if code.lstrip().startswith("#"):
            continue
        out.append(code)
        if code.strip().startswith("return") and rng.random() < 0.5:
            out.insert(-1, code[: len(code) - len(code.lstrip())] + "# my result")
    return "\n".join(out) + "\n"


def reformat(text: str, rng: random.Random) -> str:
    """Reformat: quotes swapped, spaces around operators and after commas changed, blank lines doubled."""
    text = text.replace("'", '"') if rng.random() < 0.5 else text
    text = re.sub(r", (?=\S)", ",", text)
    text = text.replace(" @ ", "@").replace("\n\n\n", "\n\n\n\n")
    return text


def split_line(text: str, rng: random.Random) -> str:
    """Split one ``return a, b`` or ``x = f(...)`` line in two: a temporary first, then the use of it."""
    lines = text.splitlines()
    candidates = [i for i, line in enumerate(lines) if re.match(r"^ +return [^,()]+\(.*\)$", line)]
    if not candidates:
        return text
    i = rng.choice(candidates)
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    lines[i : i + 1] = [f"{indent}answer_tmp = {lines[i].strip()[len('return ') :]}", f"{indent}return answer_tmp"]
    return "\n".join(lines) + "\n"


def dead_line(text: str, rng: random.Random) -> str:
    """Add a line that does nothing at the top of a function."""
    lines = text.splitlines()
    defs = [i for i, line in enumerate(lines) if line.startswith("def ") and line.endswith(":")]
    i = rng.choice(defs)
    j = i + 1
    if lines[j].strip().startswith('"""'):  # after the docstring
        j = next(k for k in range(j + 1 if lines[j].count('"""') == 1 else j, len(lines)) if '"""' in lines[k]) + 1
    lines.insert(j, "    debug = False")
    return "\n".join(lines) + "\n"


DISGUISES = [rename, reorder, comments, reformat, split_line, dead_line]


def copy_of(text: str, seed: int) -> str:
    rng = random.Random(f"copy-{seed}")
    chosen = [d for d in DISGUISES if rng.random() < 0.7] or [rename]
    for disguise in chosen:
        text = disguise(text, rng)
    ast.parse(text)  # a disguise must keep the file valid Python
    return text


# what the similarity pass and summary read of a result; the rest (timings, evidence, digests of every check
# file) is left out of the committed copies
KEPT_TEST = ("name", "score", "max_score", "output")
KEPT_EXTRA = ("check", "outcome", "mistake", "flag")
KEPT_PROVENANCE = ("graded_file", "sha256", "checks_sha256", "settings_sha256", "settings_from", "grader_version")


def trimmed(result: dict) -> dict:
    from autograder.course.similarity import FEEDBACK_CHARS

    extra = result.get("extra_data", {})
    provenance = {k: v for k, v in extra.get("provenance", {}).items() if k in KEPT_PROVENANCE}
    tests = [{**{k: t[k] for k in KEPT_TEST if k in t},
              "output": str(t.get("output", "")).split("\n", 1)[0][: 4 * FEEDBACK_CHARS],
              "extra_data": {k: v for k, v in (t.get("extra_data") or {}).items() if k in KEPT_EXTRA}}
             for t in result.get("tests", [])]  # fmt: skip
    kept = {k: result[k] for k in ("score", "max_score", "execution_time", "ungradable", "grader_error") if k in result}
    return {**kept, "tests": tests, "extra_data": {"graded_file": extra.get("graded_file"), "provenance": provenance}}


def keep_results(graded: Path) -> None:
    import json

    folder = HERE / "results"
    folder.mkdir(exist_ok=True)
    for path in sorted(graded.glob("*.json")):
        (folder / path.name).write_text(json.dumps(trimmed(json.loads(path.read_text()))) + "\n")


def main() -> int:
    if sys.argv[1:2] == ["--results"]:
        keep_results(Path(sys.argv[2]))
        return 0
    CLASS.mkdir(exist_ok=True)
    for old in CLASS.glob("*.py"):
        old.unlink()
    written = {}
    for student in range(INDEPENDENT):
        written[f"student{student:02d}"] = independent(student)
    for source in COPIES:
        name = f"student{source:02d}"
        written[f"copy_of_{name}"] = copy_of(written[name], source)
    for name, text in written.items():
        ast.parse(text)
        (CLASS / f"{name}.py").write_text(text)
    print(f"wrote {len(written)} submissions to {CLASS.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
