"""Draw docs/saturation.svg: the average largest attention weight against d_k, with and without the scale.

    .venv/bin/python docs/make_saturation_plot.py

Plain SVG, written by hand, so the project needs no plotting library.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

SIZES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
KEYS, ROWS = 50, 2000


def largest_weight(d_k: int, scaled: bool, generator: torch.Generator) -> float:
    q = torch.randn(ROWS, 1, d_k, generator=generator)
    k = torch.randn(ROWS, KEYS, d_k, generator=generator)
    scores = (q @ k.transpose(-2, -1)).squeeze(1)
    if scaled:
        scores = scores / math.sqrt(d_k)
    return float(torch.softmax(scores, dim=-1).amax(dim=-1).mean())


def svg(series: dict[str, list[float]]) -> str:
    width, height, left, bottom, top, right = 640, 340, 60, 50, 30, 200
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(i: int) -> float:
        return left + plot_w * i / (len(SIZES) - 1)

    def y(value: float) -> float:
        return top + plot_h * (1 - value)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}"'
        ' font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<line x1="{left}" y1="{y(0)}" x2="{left + plot_w}" y2="{y(0)}" stroke="black"/>',
        f'<line x1="{left}" y1="{y(0)}" x2="{left}" y2="{y(1)}" stroke="black"/>',
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1):
        parts.append(f'<text x="{left - 8}" y="{y(tick) + 4}" text-anchor="end">{tick:g}</text>')
    for i, d_k in enumerate(SIZES):
        parts.append(f'<text x="{x(i)}" y="{y(0) + 16}" text-anchor="middle">{d_k}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 12}" text-anchor="middle">d_k (log scale)</text>')
    parts.append(f'<text x="{left}" y="{top - 12}">mean largest weight in a row of {KEYS} keys</text>')
    for (label, values), colour, row in zip(series.items(), ("#c0392b", "#2471a3"), (0, 1)):
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{left + plot_w + 10}" y="{top + 20 + 18 * row}" fill="{colour}">{label}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main() -> None:
    generator = torch.Generator().manual_seed(0)
    series = {
        "softmax(QK^T)": [largest_weight(d, False, generator) for d in SIZES],
        "softmax(QK^T/sqrt(d_k))": [largest_weight(d, True, generator) for d in SIZES],
    }
    for label, values in series.items():
        print(label, " ".join(f"{v:.2f}" for v in values))
    target = Path(__file__).with_name("saturation.svg")
    target.write_text(svg(series))
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
