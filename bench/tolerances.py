"""Print the margins behind the grader's tolerances: honest errors below, wrong variants above.

    PYTHONPATH=. .venv/bin/python bench/tolerances.py [CASES]

For each dtype, over CASES (default 300) random inputs of the hidden checks' sizes (every axis
from 1 to 12, d_k up to 64, masks with a fully masked row, causal or not):

- honest: correct math written the ways students write it (a float32-rounded 1/sqrt(d_k), a
  float32 softmax inside float64 work, everything in float32 inside, einsum, Q scaled first),
  compared with the float64 reference on the same rounded inputs. Printed: the largest absolute
  error, and the largest error as a fraction of what the tolerance allows (must stay <= 0.1).
- wrong: each known-wrong variant (autograder.checks.mistakes), computed in that dtype. Printed:
  its smallest (over cases) largest error, and the same as a multiple of what the tolerance
  allows (must stay >= 10).

The tolerances are read from autograder/defaults.toml, so the figures check the file in use.
"""

from __future__ import annotations

import math
import sys

import torch

from autograder.checks.mistakes import sdpa_variants
from autograder.config import load_settings
from reference import attention as ref

DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def _softmax(scores, mask, dtype=None):
    """Reference masked_softmax, optionally computed in another dtype and cast back."""
    if dtype is None:
        return ref.masked_softmax(scores, mask)
    return ref.masked_softmax(scores.to(dtype), mask).to(scores.dtype)


def _full_mask(Q, K, mask, is_causal):
    if is_causal:
        causal = ref.causal_mask(Q.size(-2), K.size(-2))
        return causal if mask is None else mask & causal
    return mask


def honest_variants(Q, K, V, mask, is_causal):
    """(output, weights) of correct math written differently; all keep the input's dtype."""
    d_k = Q.size(-1)
    full = _full_mask(Q, K, mask, is_causal)
    raw = Q @ K.transpose(-2, -1)
    sqrt32 = torch.sqrt(torch.tensor(d_k, dtype=torch.float32))  # the student idiom: a float32 constant
    found = {
        "naive": _softmax(raw / math.sqrt(d_k), full),
        "float32 sqrt(d_k)": _softmax(raw / sqrt32.to(Q.dtype), full),
        "float32 1/sqrt(d_k) on Q": _softmax((Q * (1 / sqrt32).to(Q.dtype)) @ K.transpose(-2, -1), full),
        "float32 softmax inside": _softmax(raw / math.sqrt(d_k), full, torch.float32),
        "einsum": _softmax(torch.einsum("...qd,...kd->...qk", Q, K) / math.sqrt(d_k), full),
    }
    results = {name: (w @ V, w) for name, w in found.items()}
    low = [x.float() for x in (Q, K, V)]
    out32, w32 = ref.scaled_dot_product_attention(*low, mask, is_causal)
    results["all float32 inside"] = (out32.to(Q.dtype), w32.to(Q.dtype))
    return results


def _ratio(got, expected, atol, rtol):
    """Largest |got - expected| / (atol + rtol*|expected|); inf for NaN or inf where finite was expected."""
    got, expected = got.double(), expected.double()
    if bool((~got.isfinite() & expected.isfinite()).any()):
        return math.inf, math.inf
    error = (got - expected).abs()
    return float(error.max()), float((error / (atol + rtol * expected.abs())).max())


def _case(generator, low):
    B, H, T_q, T_k, d_k, d_v = (int(torch.randint(low, 13, (), generator=generator)) for _ in range(6))
    if bool(torch.rand((), generator=generator) < 0.3):
        d_k = int(torch.randint(13, 65, (), generator=generator))
    Q, K, V = (torch.randn(B, H, T, d, generator=generator, dtype=torch.float64) for T, d in ((T_q, d_k), (T_k, d_k), (T_k, d_v)))
    mask = torch.rand(B, 1, T_q, T_k, generator=generator) < 0.6
    mask[..., 0] = True
    mask[0, 0, 0] = False  # one fully masked row: the fill and NaN variants differ there
    is_causal = bool(torch.rand((), generator=generator) < 0.5) and T_q != T_k
    return Q, K, V, mask, is_causal


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    settings = load_settings()
    generator = torch.Generator().manual_seed(0)
    honest = {dtype: {} for dtype in DTYPES}
    wrong = {dtype: {} for dtype in DTYPES}
    for index in range(2 * count):
        # honest cases use every size from 1 (edge shapes); wrong ones sizes from 2, since with a
        # size of 1 some mistakes are no mistake (d_k = 1: sqrt(d_k) = d_k; T_k = 1: one weight of 1)
        honest_case = index < count
        Q, K, V, mask, is_causal = _case(generator, 1 if honest_case else 2)
        for dtype in DTYPES:
            atol, rtol = settings.tolerance(str(dtype).removeprefix("torch."))
            low = [x.to(dtype) for x in (Q, K, V)]
            expected = ref.scaled_dot_product_attention(*[x.double() for x in low], mask, is_causal)
            if honest_case:
                for name, got in honest_variants(*low, mask, is_causal).items():
                    error = max(_ratio(g, e, atol, rtol) for g, e in zip(got, expected))
                    previous = honest[dtype].get(name, (0.0, 0.0))
                    honest[dtype][name] = (max(previous[0], error[0]), max(previous[1], error[1]))
                continue
            # float16 cannot hold the -1e6 fill: its wrong variants are computed in float32, then rounded
            work = dtype if dtype in (torch.float64, torch.float32) else torch.float32
            variants = sdpa_variants(*[x.to(work) for x in low], mask, is_causal)
            for name, pair in variants.items():
                got = [x.to(dtype) for x in pair]
                if name.startswith("causal") and not is_causal:
                    continue
                error = max(_ratio(g, e, atol, rtol) for g, e in zip(got, expected))
                previous = wrong[dtype].get(name, (math.inf, math.inf))
                wrong[dtype][name] = (min(previous[0], error[0]), min(previous[1], error[1]))
    print(f"{count} honest and {count} wrong cases; error = max |got - float64 reference| over output and weights;"
          " x tol = that error / (atol + rtol*|expected|), worst entry")
    for dtype in DTYPES:
        atol, rtol = settings.tolerance(str(dtype).removeprefix("torch."))
        print(f"\n{str(dtype).removeprefix('torch.')}: atol {atol:g}, rtol {rtol:g}")
        print("  honest (largest over cases)         error     x tol")
        for name, (error, ratio) in sorted(honest[dtype].items(), key=lambda item: -item[1][1]):
            print(f"    {name:32s} {error:9.2e} {ratio:9.2e}")
        print("  wrong (smallest over cases)         error     x tol")
        for name, (error, ratio) in sorted(wrong[dtype].items(), key=lambda item: item[1][1]):
            print(f"    {name:32s} {error:9.3g} {ratio:9.3g}")


if __name__ == "__main__":
    main()
