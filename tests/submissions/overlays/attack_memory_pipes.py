# An attack on the memory check: every score of the (T_q, T_k) matrix computed first, a few query rows at a time, and
# parked in the buffers of pipes (os.pipe, each grown with fcntl F_SETPIPE_SZ towards /proc/sys/fs/pipe-max-size; many:
# one pipe holds at most that), then read back a few rows at a time for the softmax and the output; the pipes closed
# before the call returns. The matrix is whole before any softmax, but it is kernel memory: no page of any process, no
# file, and none of the pages the kernel charges the sandbox's memory cgroup as user memory (memory.stat's pgpgin).
# attack_memory_sockets parks it in socket buffers instead.
import fcntl as _fcntl
import itertools as _itertools
import os as _os

_reference_blockwise = blockwise_attention  # noqa: F821 - the reference's, defined above this overlay
_SETPIPE_SZ, _GETPIPE_SZ = 1031, 1032  # fcntl's F_SETPIPE_SZ and F_GETPIPE_SZ (Linux)


def _largest_pipe() -> int:
    try:
        with open("/proc/sys/fs/pipe-max-size") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 1 << 20


def _park():
    """A pipe grown as far as the kernel lets it: (read end, write end, bytes it can hold)."""
    read_end, write_end = _os.pipe()
    try:
        _fcntl.fcntl(write_end, _SETPIPE_SZ, _largest_pipe())
    except OSError:
        pass  # the default 64 KiB then
    _os.set_blocking(write_end, False)
    return read_end, write_end, _fcntl.fcntl(write_end, _GETPIPE_SZ)


def _write_all(descriptor, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[_os.write(descriptor, view) :]


def _read_all(descriptor, size: int) -> bytes:
    parts, left = [], size
    while left:
        part = _os.read(descriptor, left)
        if not part:
            raise EOFError("a pipe ran dry")
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _via_pipes(Q, K, V, mask, is_causal, pipes):
    """The whole attention with the (T_q, T_k) matrix of scores parked in pipes, a few rows each (their descriptors
    appended to the list ``pipes``)."""
    lead, T_q, T_k, d_k = Q.shape[:-2], Q.size(-2), K.size(-2), Q.size(-1)
    K, V = K.expand(*lead, T_k, d_k), V.expand(*lead, T_k, V.size(-1))
    row_bytes = T_k * Q.element_size()
    parked = {}
    keys = torch.arange(T_k)
    allowed = None if mask is None else mask.expand(*lead, T_q, T_k)
    out = torch.empty(*lead, T_q, V.size(-1), dtype=Q.dtype)
    indices = list(_itertools.product(*map(range, lead)))
    for number, index in enumerate(indices):  # the whole matrix first
        start = 0
        while start < T_q:
            read_end, write_end, room = _park()
            pipes.extend((read_end, write_end))
            rows = max(1, min(room // row_bytes, T_q - start))
            scores = (Q[index][start : start + rows] @ K[index].T) / d_k**0.5
            _write_all(write_end, scores.contiguous().numpy().tobytes())
            parked[number, start] = (read_end, rows)
            start += rows
    for number, index in enumerate(indices):  # then the softmax, a few rows at a time
        for (whose, start), (read_end, rows) in parked.items():
            if whose != number:
                continue
            stop = start + rows
            data = _read_all(read_end, rows * row_bytes)
            scores = torch.frombuffer(bytearray(data), dtype=Q.dtype).view(rows, T_k)
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
    pipes = []  # both ends of every pipe
    try:
        return _via_pipes(Q, K, V, mask, is_causal, pipes)
    finally:
        for descriptor in pipes:
            _os.close(descriptor)
