"""The tiny public examples a failed check may picture: each one's name and what it shows, in one place.

A check names its example in its marker (``picture=``, validated when the checks are collected);
``pictures.tiny_example`` builds each one, and the edge describes it with these words (the block
grid, the images). Plain data: the edge reads it without importing torch.
"""

from __future__ import annotations

EXAMPLES = {
    "plain": "no mask",
    "padding": "keys 4-5 padding, query 5 sees none",
    "causal": "is_causal=True",
}
