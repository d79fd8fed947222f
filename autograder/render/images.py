"""PNG pictures, drawn with matplotlib from the results' fields, and embedded in HTML as data URIs.

matplotlib is the ``[report]`` extra: only ``--html`` and ``--report`` need it (``require`` says so
before anything is graded). Figures are built without pyplot, so no global state or display is used.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence

from autograder.render.text import EXAMPLES, got_weight

INSTALL = "pip install 'sdpa-assignment[report]'"
BLUE, GREEN, RED, GREY = "#3b6fb6", "#3a9a5b", "#c8453a", "#9a9a9a"


class MissingMatplotlib(RuntimeError):
    """--html and --report draw with matplotlib, which is not installed."""


def require() -> None:
    """Fail early, with the command that fixes it, when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as error:
        raise MissingMatplotlib(INSTALL) from error


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def data_uri(image: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(image).decode("ascii")


CELL = 0.5  # inches per heat-map cell: room for a 4-character weight at LABEL_POINTS
LABEL_POINTS = 9.5  # each cell's weight, about 13 px high at 100 dpi (the page shows the image at its own size)


def attention_png(picture: dict) -> bytes:
    """The tiny example's weights as two heat maps, expected beside yours, each cell's weight written in it; masked
    keys hatched, a masked key that got weight outlined in red, NaN in red; a colour bar and a legend for what is
    drawn, so the scale is readable without telling colours apart."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.patches import Patch, Rectangle

    queries, keys = picture["queries"], picture["keys"]
    figure = _figure(2 * (CELL * keys + 0.9) + 1.1, CELL * queries + 2.4)
    described = EXAMPLES.get(picture["example"], picture["example"])
    figure.suptitle(
        f"{picture['function']}: tiny public example\n({queries} queries x {keys} keys; {described})", fontsize=10
    )
    axes = figure.subplots(1, 2)
    drawn = set()
    for ax, title, weights in zip(axes, ("expected", "yours"), (picture["expected"], picture["got"])):
        values = [[math.nan if w is None else w for w in row] for row in weights]
        ax.imshow(values, cmap="Blues", vmin=0.0, vmax=1.0)
        ax.set_title(title, fontsize=11)
        ax.set_xlabel("key", fontsize=10)
        ax.set_ylabel("query", fontsize=10)
        ax.set_xticks(range(keys))
        ax.set_yticks(range(queries))
        ax.tick_params(labelsize=9, length=0)
        for i, row in enumerate(weights):
            for j, w in enumerate(row):
                masked = picture["mask"] is not None and not picture["mask"][i][j]
                if masked:
                    drawn.add("masked")
                    ax.add_patch(
                        Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", edgecolor=GREY, linewidth=0)
                    )
                leaked = masked and title == "yours" and got_weight(picture, i, j)
                if leaked:  # a masked key that got more weight than the check allows: outlined in red
                    drawn.add("leaked")
                    ax.add_patch(Rectangle((j - 0.45, i - 0.45), 0.9, 0.9, fill=False, edgecolor=RED, linewidth=2))
                if w is None:
                    drawn.add("nan")
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, color=RED))
                    label, color = "NaN", "white"
                else:
                    label = weight_label(w)
                    color = "white" if w > 0.6 else (RED if leaked else "black")
                ax.text(j, i, label, ha="center", va="center", fontsize=LABEL_POINTS, color=color)
    bar = figure.colorbar(ScalarMappable(Normalize(0.0, 1.0), cmap="Blues"), ax=list(axes), shrink=0.8)
    bar.set_label("weight (written in each cell)", fontsize=9)
    bar.ax.tick_params(labelsize=9)
    legend = {
        "masked": Patch(facecolor="white", edgecolor=GREY, hatch="///", label="masked key (must get 0)"),
        "leaked": Patch(facecolor="white", edgecolor=RED, linewidth=2, label="masked key that got weight"),
        "nan": Patch(color=RED, label="NaN"),
    }
    shown = [patch for key, patch in legend.items() if key in drawn]
    if shown:
        figure.legend(handles=shown, loc="outside lower center", ncols=len(shown), fontsize=9, frameon=False)
    return png(figure)


def weight_label(weight: float) -> str:
    """A weight in at most 4 characters, never rounded to look like 0 when it is not (written in each heat-map cell,
    and in the page's table of the same weights)."""
    if weight == 0:
        return "0"
    if 0 < abs(weight) < 0.005:
        return "<.01" if weight > 0 else "<0"
    return f"{weight:.2f}".replace("0.", ".") if abs(weight) < 0.995 else f"{weight:.1f}"


_label = weight_label  # the name tests/render/test_render.py reads


def histogram_png(values: Sequence[float], *, bins: Sequence[float], xlabel: str, title: str) -> bytes:
    figure = _figure(6.0, 2.8)
    ax = figure.subplots()
    ax.hist(values, bins=bins, color=BLUE, edgecolor="white")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("submissions")
    ax.set_title(title, fontsize=10)
    ax.yaxis.get_major_locator().set_params(integer=True)
    return png(figure)


def bars_png(
    labels: Sequence[str],
    values: Sequence[float],
    *,
    xlabel: str,
    title: str,
    limit: float | None = None,
    colors: Sequence[str] | None = None,
    integers: bool = False,
    unit: str = "",
) -> bytes:
    """Horizontal bars, the first label on top, each with its value written at its end (``unit`` after it), so
    that a bar's colour is never the only way to read it."""
    figure = _figure(9.0, 0.6 + 0.3 * max(len(labels), 1))
    ax = figure.subplots()
    positions = range(len(labels))
    bars = ax.barh(list(positions), list(values), color=list(colors) if colors else BLUE)
    ax.bar_label(bars, labels=[f"{v:.0f}{unit}" for v in values], padding=3, fontsize=9.5)
    ax.set_yticks(list(positions), list(labels), fontsize=9.5)
    ax.invert_yaxis()
    top = limit if limit is not None else max(values, default=1) or 1
    ax.set_xlim(0, top * 1.2)  # room for the value at the longest bar's end
    if integers:
        ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    return png(figure)
