"""What the memory check's calls took and touched, as the grader measures them, for honest code and attacks.

    .venv/bin/python -u bench/memory_margins.py [--seeds 10] [--only NAME,...]

Each submission (the reference, the chunked port of tests/submissions/honest_blockwise, and the memory attacks of
tests/submissions/overlays) is loaded in one worker, as a grading loads it; for each seed, one call of the value
checks' sizes, then the memory check's three calls (without a mask, causal, with a (T_q, T_k) mask) on inputs drawn
as autograder/checks/check_6_blockwise.py draws them. For each call: ``grown`` (how far the sandbox's memory rose at
its peak, ``Reply.grown_bytes``), ``touched`` (the pages it read or wrote, ``Reply.touched_bytes``), both above the
call's inputs, ``charged`` (the pages the kernel gave the sandbox's memory cgroup or took back, the more of the two,
``Reply.charged_bytes``; the inputs are the grader's pages, never charged to the sandbox), and ``kernel`` (the most
kernel memory the group held during the call, above the least it held at the call's start or before any student code
ran: pipe and socket buffers, page tables, ``Reply.kernel_bytes``), against the allowance (half the (T_q, T_k)
matrix). Prints one row per submission: the medians and ranges in MiB, how many calls were over the allowance, and how
many of those were over it again on the call that followed (the check measures a call over it once more on a fresh
draw, and fails only then). Paste the table into docs/performance.md ("The memory check's margins").
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.checks import check_6_blockwise as memory_check  # noqa: E402
from autograder.checks.cases import Draw  # noqa: E402
from autograder.config import load_settings  # noqa: E402
from autograder.sandbox.client import Sandbox  # noqa: E402

REFERENCE = ROOT / "reference" / "attention.py"
SUBMISSIONS = ROOT / "tests" / "submissions"
NAMES = [
    "reference",
    "sub_quadratic_chunks",
    "attack_memory_reserved",
    "attack_memory_int32_bits",
    "attack_memory_blocks_kept",
    "attack_memory_between_calls",
    "attack_memory_rooms_at_import",
    "attack_memory_tmpfs",
    "attack_memory_memfd",
    "attack_memory_pipes",
    "attack_memory_sockets",
    "attack_memory_pipes_at_import",
]


def _source(name: str) -> str:
    if name == "reference":
        return REFERENCE.read_text()
    folder = SUBMISSIONS / ("honest_blockwise" if name == "sub_quadratic_chunks" else "overlays")
    return f"{REFERENCE.read_text()}\n\n{(folder / f'{name}.py').read_text()}"


def _calls(draw: Draw):
    """The memory check's three calls, drawn as it draws them (check_6_blockwise._measure)."""
    for masked, is_causal in ((False, False), (False, True), (True, False)):
        lead = memory_check.MEMORY_LEADS[draw.integer(0, len(memory_check.MEMORY_LEADS) - 1)]
        T_q = draw.integer(*memory_check.MEMORY_QUERIES) // math.prod(lead)
        T_k = draw.integer(*memory_check.MEMORY_KEYS)
        d_k, d_v = draw.sizes(2, low=8, high=16)
        block_size = draw.integer(*memory_check.MEMORY_BLOCKS)
        Q, K, V = (draw.normal(*lead, T, d, dtype=torch.float32) for T, d in ((T_q, d_k), (T_k, d_k), (T_k, d_v)))
        mask = draw.mask(T_q, T_k) if masked else None
        yield (Q, K, V, mask, is_causal, block_size)


def measure(name: str, seeds: int) -> list[tuple[float, float, float, float, float]]:
    """(grown, touched, charged, kernel, allowance), in MiB, for each of the memory check's calls (the first two above
    the inputs)."""
    settings = load_settings(environ={})
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "attention.py"
        path.write_text(_source(name))
        with Sandbox(path, dataclasses.asdict(settings.limits), imports=settings.imports.allowed) as box:
            if not box.load().ok:
                raise SystemExit(f"{name} did not load: {box.load_reply.describe()}")
            for seed in range(seeds):
                draw = Draw(seed)
                B, T_q, d_k, d_v = draw.sizes(4)
                T_k = draw.integer(13, 40)
                small = (draw.normal(B, T_q, d_k), draw.normal(B, T_k, d_k), draw.normal(B, T_k, d_v))
                box.call("blockwise_attention", small, {"block_size": 3}, timeout=60)
                for args in _calls(draw):
                    reply = box.call("blockwise_attention", args, timeout=60, pages=True)
                    if not reply.ok or reply.grown_bytes is None:
                        raise SystemExit(f"{name}: {reply.describe()} {reply.unmeasured}")
                    Q, K = args[0], args[1]
                    inputs = sum(x.numel() * x.element_size() for x in args[:4] if x is not None)
                    matrix = math.prod(Q.shape[:-1]) * K.size(-2) * Q.element_size()
                    mib = [(reply.grown_bytes - inputs) / 2**20, (reply.touched_bytes - inputs) / 2**20]
                    mib.append((reply.charged_bytes or 0) / 2**20)
                    mib.append((reply.kernel_bytes or 0) / 2**20)
                    rows.append((*mib, matrix // memory_check.MATRIX_SHARE / 2**20))
    return rows


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f} to {max(values):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--only", default="")
    options = parser.parse_args()
    names = options.only.split(",") if options.only else NAMES
    print(
        "| submission | grown above inputs, MiB | touched above inputs, MiB | charged, MiB | kernel, MiB"
        " | over the allowance | twice in a row |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in names:
        rows = measure(name, options.seeds)
        over = [max(row[:-1]) > row[-1] for row in rows]
        twice = sum(1 for first, second in zip(over, over[1:]) if first and second)
        spreads = " | ".join(_spread([row[column] for row in rows]) for column in range(4))
        print(f"| {name} | {spreads} | {sum(over)} of {len(rows)} | {twice} |", flush=True)


if __name__ == "__main__":
    main()
