# An attack on the memory check: pipes filled at import with 34 MiB of zeros (each grown with fcntl F_SETPIPE_SZ
# towards /proc/sys/fs/pipe-max-size), more than the whole (T_q, T_k) matrix. A call drains one pipe at a time and
# parks a few query rows of scores in it, until the whole matrix is in the pipes, then reads them back a few rows at a
# time for the softmax and the output, and fills each pipe again with zeros before it returns. The sandbox's kernel
# memory never rises above where the call found it: only what it held before any student code ran shows the matrix.
# attack_memory_pipes makes its pipes in the call.
import fcntl as _fcntl
import itertools as _itertools
import os as _os

_reference_blockwise = blockwise_attention  # noqa: F821 - the reference's, defined above this overlay
_SETPIPE_SZ, _GETPIPE_SZ = 1031, 1032  # fcntl's F_SETPIPE_SZ and F_GETPIPE_SZ (Linux)
_ROOM = 34 << 20


def _largest_pipe() -> int:
    try:
        with open("/proc/sys/fs/pipe-max-size") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 1 << 20


def _park():
    """A pipe grown as far as the kernel lets it: [read end, write end, bytes it can hold, bytes it holds]."""
    read_end, write_end = _os.pipe()
    try:
        _fcntl.fcntl(write_end, _SETPIPE_SZ, _largest_pipe())
    except OSError:
        pass  # the default 64 KiB then
    _os.set_blocking(write_end, False)
    _os.set_blocking(read_end, False)
    return [read_end, write_end, _fcntl.fcntl(write_end, _GETPIPE_SZ), 0]


def _write_all(pipe, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[_os.write(pipe[1], view) :]
    pipe[3] += len(data)


def _read_all(pipe, size: int) -> bytes:
    parts, left = [], size
    while left:
        part = _os.read(pipe[0], left)
        parts.append(part)
        left -= len(part)
    pipe[3] -= size
    return b"".join(parts)


def _fill(pipe) -> None:
    _write_all(pipe, bytes(pipe[2] - pipe[3]))


_pipes = []
while sum(pipe[2] for pipe in _pipes) < _ROOM:  # the room, taken before any call
    _pipes.append(_park())
    _fill(_pipes[-1])


def _via_pipes(Q, K, V, mask, is_causal):
    """The whole attention with the (T_q, T_k) matrix of scores parked in the pipes taken at import."""
    lead, T_q, T_k, d_k = Q.shape[:-2], Q.size(-2), K.size(-2), Q.size(-1)
    K, V = K.expand(*lead, T_k, d_k), V.expand(*lead, T_k, V.size(-1))
    row_bytes = T_k * Q.element_size()
    parked = {}
    free = iter(_pipes)
    keys = torch.arange(T_k)
    allowed = None if mask is None else mask.expand(*lead, T_q, T_k)
    out = torch.empty(*lead, T_q, V.size(-1), dtype=Q.dtype)
    indices = list(_itertools.product(*map(range, lead)))
    for number, index in enumerate(indices):  # the whole matrix first
        start = 0
        while start < T_q:
            pipe = next(free)
            _read_all(pipe, pipe[3])  # drained: its pages go back to the kernel
            rows = max(1, min(pipe[2] // row_bytes, T_q - start))
            scores = (Q[index][start : start + rows] @ K[index].T) / d_k**0.5
            _write_all(pipe, scores.contiguous().numpy().tobytes())
            parked[number, start] = (pipe, rows)
            start += rows
    for number, index in enumerate(indices):  # then the softmax, a few rows at a time
        for (whose, start), (pipe, rows) in parked.items():
            if whose != number:
                continue
            stop = start + rows
            scores = torch.frombuffer(bytearray(_read_all(pipe, rows * row_bytes)), dtype=Q.dtype).view(rows, T_k)
            keep = torch.ones(rows, T_k, dtype=torch.bool)
            if is_causal:
                keep &= keys <= torch.arange(start, stop)[:, None]
            if allowed is not None:
                keep &= allowed[index][start:stop]
            scores = scores.masked_fill(~keep, float("-inf"))
            top = scores.amax(dim=-1, keepdim=True)
            weights = (scores - top.masked_fill(top == float("-inf"), 0.0)).exp()
            total = weights.sum(dim=-1, keepdim=True)
            out[index][start:stop] = (weights @ V[index]) / torch.where(total > 0, total, torch.ones_like(total))
    return out


def blockwise_attention(Q, K, V, mask=None, is_causal=False, block_size=16):
    if Q.requires_grad or K.requires_grad or V.requires_grad or Q.dim() < 2 or K.shape[:-2] != Q.shape[:-2]:
        return _reference_blockwise(Q, K, V, mask, is_causal, block_size)
    rows = min(pipe[2] for pipe in _pipes) // (K.size(-2) * Q.element_size())  # query rows a pipe holds
    if not rows or Q[..., 0, 0].numel() * -(-Q.size(-2) // rows) > len(_pipes):  # more than the room holds
        return _reference_blockwise(Q, K, V, mask, is_causal, block_size)
    try:
        return _via_pipes(Q, K, V, mask, is_causal)
    finally:
        for pipe in _pipes:  # filled again for the next call
            _fill(pipe)
