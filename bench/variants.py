"""Grade many submissions derived from the reference under several seeds: is a grade a function of the code?

    PYTHONPATH=. .venv/bin/python bench/variants.py [--seeds N] [--only NAME ...]

Each variant is a few lines appended to reference/attention.py that redefine one function:
CORRECT rewrites (the ways students write the same math) must get full marks under every seed;
WRONG ones must lose points under every seed, and the same points. A variant whose set of failed
checks changes from one seed to the next is seed-dependent: the run prints it and exits 1.
A variant that the suite grades too is read from its overlay (tests/submissions/overlays), by name.
All gradings share one worker zygote, as a batch does.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from autograder.config import load_settings
from autograder.grade import grade
from autograder.sandbox.zygote import Zygote

ROOT = Path(__file__).resolve().parent.parent
OVERLAYS = ROOT / "tests" / "submissions" / "overlays"

# the checks that depend on the machine's load, not on the code's math
TIMING = {"timing_cpu", "timing_gpu"}
FAST_TIMING = "[timing]\nrounds = 1\nretries = 1\n"


def _overlay(name: str) -> str:
    """The overlay tests/submissions/overlays/NAME.py: a variant the suite grades too is kept in one copy, there."""
    return (OVERLAYS / f"{name}.py").read_text()


CORRECT = {
    "einsum_scores": """
def attention_scores(Q, K):
    return torch.einsum("...qd,...kd->...qk", Q, K)
""",
    "matmul_mT": """
def attention_scores(Q, K):
    return torch.matmul(Q, K.mT)
""",
    "float32_sqrt": _overlay("correct_float32_sqrt"),
    "float32_rsqrt_multiply": """
def scale_scores(scores, d_k):
    return scores * torch.rsqrt(torch.tensor(float(d_k)))
""",
    "pow_half": """
def scale_scores(scores, d_k):
    return scores / d_k ** 0.5
""",
    "scale_q_first": """
def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    d_k = Q.size(-1)
    scores = attention_scores(Q / math.sqrt(d_k), K)
    if is_causal:
        causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)
        mask = causal if mask is None else mask & causal
    weights = masked_softmax(scores, mask)
    return attention_output(weights, V), weights
""",
    "scale_q_first_float32_constant": """
def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    scale = 1.0 / torch.sqrt(torch.tensor(Q.size(-1), dtype=torch.float32))
    scores = attention_scores(Q * scale.to(Q.dtype), K)
    if is_causal:
        causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)
        mask = causal if mask is None else mask & causal
    weights = masked_softmax(scores, mask)
    return attention_output(weights, V), weights
""",
    "explicit_softmax_where": """
def masked_softmax(scores, mask=None):
    if mask is None:
        mask = torch.ones_like(scores, dtype=torch.bool)
    scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=scores.dtype))
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max)).detach()
    exp = torch.exp(scores - row_max)
    total = exp.sum(dim=-1, keepdim=True)
    return exp / total.clamp_min(torch.finfo(scores.dtype).tiny)
""",
    "finfo_min_fill_then_zero": """
def masked_softmax(scores, mask=None):
    if mask is None:
        return torch.softmax(scores, dim=-1)
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(filled, dim=-1).masked_fill(~mask, 0.0)
""",
    "log_softmax_exp": """
def masked_softmax(scores, mask=None):
    if mask is None:
        return torch.log_softmax(scores, dim=-1).exp()
    weights = torch.log_softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1).exp()
    return weights * mask
""",
    "float32_softmax_inside": """
_reference_softmax = masked_softmax


def masked_softmax(scores, mask=None):
    return _reference_softmax(scores.float(), mask).to(scores.dtype)
""",
    "float32_logsumexp_inside": _overlay("correct_float32_logsumexp"),
    "float64_inside": _overlay("correct_float64_inside"),
    "causal_not_triu": """
def causal_mask(T_q, T_k=None, *, device=None):
    T_k = T_q if T_k is None else T_k
    return ~torch.ones(T_q, T_k, dtype=torch.bool, device=device).triu(diagonal=1)
""",
    "causal_arange": """
def causal_mask(T_q, T_k=None, *, device=None):
    T_k = T_q if T_k is None else T_k
    return torch.arange(T_k, device=device)[None, :] <= torch.arange(T_q, device=device)[:, None]
""",
    "output_einsum": """
def attention_output(weights, V):
    return torch.einsum("...qk,...kd->...qd", weights, V)
""",
    "mha_permute_contiguous": """
def _mha_forward(self, query, key, value, mask=None, is_causal=False):
    B = query.size(0)
    def split(x):
        return x.view(B, -1, self.num_heads, self.d_head).permute(0, 2, 1, 3)
    q, k, v = split(self.w_q(query)), split(self.w_k(key)), split(self.w_v(value))
    if mask is not None and mask.dim() == 3:
        mask = mask[:, None]
    out, weights = scaled_dot_product_attention(q, k, v, mask, is_causal)
    out = out.permute(0, 2, 1, 3).contiguous().view(B, -1, self.d_model)
    return self.w_o(out), weights


MultiHeadAttention.forward = _mha_forward
""",
}

WRONG = {
    "no_scale": _overlay("mistake_no_scale"),
    "divide_by_dk": _overlay("mistake_divide_by_dk"),
    "float32_output_for_float64": """
_reference_sdpa = scaled_dot_product_attention


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    output, weights = _reference_sdpa(Q.float(), K.float(), V.float(), mask, is_causal)
    return output, weights
""",
    "query_axis": _overlay("mistake_query_axis"),
    "mask_inverted": _overlay("mistake_mask_inverted"),
    "zero_fill": _overlay("mistake_zero_fill"),
    "mask_after_softmax": _overlay("mistake_mask_after_softmax"),
    "nan_rows": _overlay("mistake_nan_rows"),
    "fill_minus_1e9": """
def masked_softmax(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e9)
    return torch.softmax(scores, dim=-1)
""",
    "float16_softmax_inside": """
_reference_softmax = masked_softmax


def masked_softmax(scores, mask=None):
    return _reference_softmax(scores.half(), mask).to(scores.dtype)
""",
    "bfloat16_softmax_inside": """
_reference_softmax = masked_softmax


def masked_softmax(scores, mask=None):
    return _reference_softmax(scores.bfloat16(), mask).to(scores.dtype)
""",
    "causal_flipped": _overlay("mistake_causal_flipped"),
    "causal_bottom_right": _overlay("mistake_causal_bottom_right"),
    "causal_skipped_for_one_query": _overlay("edge_causal_skipped_for_one_query"),
    "transpose_12": _overlay("mistake_transpose_12"),
    "no_max_subtraction": """
def masked_softmax(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    exp = torch.exp(scores)
    total = exp.sum(dim=-1, keepdim=True)
    return exp / torch.where(total > 0, total, torch.ones_like(total))
""",
    "squeeze_batch": _overlay("edge_squeeze_batch"),
    "mha_split_no_transpose": _overlay("mistake_mha_split_no_transpose"),
    "mha_merge_no_transpose": _overlay("mistake_mha_merge_no_transpose"),
    "mha_merge_order": _overlay("mistake_mha_merge_order"),
    "mha_scale_d_model": _overlay("mistake_mha_scale_d_model"),
    "mha_bias_always": """
_reference_mha_init = MultiHeadAttention.__init__


def _mha_init(self, d_model, num_heads, bias=True):
    _reference_mha_init(self, d_model, num_heads, True)


MultiHeadAttention.__init__ = _mha_init
""",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds per variant (default 5)")
    parser.add_argument("--only", nargs="*", help="grade only these variants")
    options = parser.parse_args()
    seeds = [1000 + index for index in range(options.seeds)]
    reference = (ROOT / "reference" / "attention.py").read_text()
    variants = [(name, code, True) for name, code in CORRECT.items()] + [
        (name, code, False) for name, code in WRONG.items()
    ]
    if options.only:
        variants = [v for v in variants if v[0] in options.only]
    zygote = Zygote()
    zygote.wait_ready()
    start = time.perf_counter()
    problems = gradings = 0
    with tempfile.TemporaryDirectory() as folder:
        # the timing checks' outcomes are left out: measure them once, without retries
        fast = Path(folder) / "fast_timing.toml"
        fast.write_text(FAST_TIMING)
        settings = load_settings(fast, environ={})
        for name, code, correct in variants:
            path = Path(folder) / f"{name}.py"
            path.write_text(f"{reference}\n\n# --- variant {name} ---\n{code}")
            failed_sets = set()
            scores = []
            for seed in seeds:
                grading = grade(path, settings, zygote=zygote, seed=seed)
                gradings += 1
                failed = frozenset(
                    t.outcome.check
                    for t in grading.scored
                    if t.max_score and t.score < t.max_score and t.outcome.check not in TIMING
                )
                failed_sets.add(failed)
                scores.append(sum(t.score for t in grading.scored if t.outcome.check not in TIMING))
            verdict = "ok"
            if len(failed_sets) > 1:
                verdict = "SEED-DEPENDENT"
            elif correct and failed:
                verdict = "CORRECT BUT LOSES POINTS"
            elif not correct and not failed:
                verdict = "WRONG BUT FULL MARKS"
            problems += verdict != "ok"
            kind = "correct" if correct else "wrong"
            shown = ", ".join(sorted(set().union(*failed_sets))) or "-"
            print(f"{verdict:26s} {kind:7s} {name:32s} scores {sorted(set(scores))} failed: {shown}", flush=True)
    zygote.close()
    correct_count = sum(1 for v in variants if v[2])
    print(
        f"\n{len(variants)} variants ({correct_count} correct, {len(variants) - correct_count} wrong)"
        f" x {len(seeds)} seeds"
        f" = {gradings} gradings in {time.perf_counter() - start:.0f} s; {problems} variant(s) with a problem"
        " (seed-dependent, correct losing points, or wrong with full marks); timing checks left out"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
