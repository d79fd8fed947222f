"""Print the errors behind the grader's tolerances: a naive implementation in each dtype, and the classic mistakes.

    .venv/bin/python bench/tolerances.py

For each dtype: the largest |naive - float64 reference| over many random inputs of the hidden
checks' sizes (outputs and weights). Then how far each known-wrong variant lands from the
reference in float32: the gap the tolerances must stay far below.
"""

from __future__ import annotations

import math

import torch

from autograder.checks.mistakes import sdpa_variants
from reference import attention as ref


def naive(Q, K, V, mask):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights


def main() -> None:
    generator = torch.Generator().manual_seed(0)
    worst = {dtype: 0.0 for dtype in (torch.float32, torch.float16, torch.bfloat16)}
    gaps: dict[str, float] = {}
    for trial in range(200):
        B, T_q, T_k, d_k, d_v = (int(x) + 2 for x in torch.randperm(11, generator=generator)[:5])
        Q, K, V = (torch.randn(B, T, d, generator=generator, dtype=torch.float64) for T, d in ((T_q, d_k), (T_k, d_k), (T_k, d_v)))
        mask = torch.rand(B, T_q, T_k, generator=generator) < 0.6
        mask[..., 0] = True
        for dtype in worst:
            low = [x.to(dtype) for x in (Q, K, V)]
            expected = ref.scaled_dot_product_attention(*[x.double() for x in low], mask)
            got = naive(*low, mask)
            error = max(float((g.double() - e).abs().max()) for g, e in zip(got, expected))
            worst[dtype] = max(worst[dtype], error)
        expected_output, _ = ref.scaled_dot_product_attention(Q, K, V, mask)
        for name, (output, _) in sdpa_variants(Q, K, V, mask, False).items():
            gap = float((output - expected_output).abs().max().nan_to_num(math.inf))
            gaps[name] = min(gaps.get(name, math.inf), gap) if trial else gap
    print("max |naive - float64 reference| over 200 random cases (output and weights):")
    for dtype, error in worst.items():
        print(f"  {str(dtype).removeprefix('torch.'):9s} {error:.2e}")
    print("smallest gap between a wrong variant and the reference over the same cases (output, float64):")
    for name, gap in sorted(gaps.items(), key=lambda item: item[1]):
        print(f"  {name:20s} {gap:.3g}")


if __name__ == "__main__":
    main()
