# An attack on the memory check: every score of the (T_q, T_k) matrix computed first, a few query rows at a time, and
# parked in the buffers of Unix socket pairs (socket.socketpair, each send buffer grown with SO_SNDBUF; many: one pair
# holds at most twice net.core.wmem_max), one after another as a queue, then read back in the same order a few rows at
# a time for the softmax and the output; the sockets closed before the call returns. The matrix is whole before any
# softmax, but it is kernel memory (the sockets' queued buffers): no page of any process, no file, and none of the
# pages the kernel charges the sandbox's memory cgroup as user memory (memory.stat's pgpgin). attack_memory_pipes
# parks it in pipes.
import itertools as _itertools
import socket as _socket

_reference_blockwise = blockwise_attention  # noqa: F821 - the reference's, defined above this overlay


class _Queue:
    """Bytes kept in the kernel: written into one socket pair until its buffer is full, then into a new one; read
    back in the order they were written."""

    def __init__(self):
        self.pairs = []  # (reading end, writing end, bytes it holds)
        self.next = 0  # the pair read from now

    def _grow(self):
        reading, writing = _socket.socketpair()
        try:
            writing.setsockopt(_socket.SOL_SOCKET, _socket.SO_SNDBUF, 1 << 30)  # capped by net.core.wmem_max
        except OSError:
            pass
        writing.setblocking(False)
        self.pairs.append([reading, writing, 0])

    def put(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if not self.pairs:
                self._grow()
            try:
                sent = self.pairs[-1][1].send(view[: 1 << 16])
            except BlockingIOError:
                sent = 0
            if not sent:
                self._grow()
                continue
            self.pairs[-1][2] += sent
            view = view[sent:]

    def take(self, size: int) -> bytes:
        parts = []
        while size:
            pair = self.pairs[self.next]
            if not pair[2]:
                self.next += 1
                continue
            part = pair[0].recv(min(size, pair[2]))
            pair[2] -= len(part)
            size -= len(part)
            parts.append(part)
        return b"".join(parts)

    def close(self):
        for reading, writing, _ in self.pairs:
            reading.close()
            writing.close()


def _via_sockets(Q, K, V, mask, is_causal, queue):
    """The whole attention with the (T_q, T_k) matrix of scores parked in ``queue`` a few rows at a time."""
    lead, T_q, T_k, d_k = Q.shape[:-2], Q.size(-2), K.size(-2), Q.size(-1)
    K, V = K.expand(*lead, T_k, d_k), V.expand(*lead, T_k, V.size(-1))
    row_bytes = T_k * Q.element_size()
    rows = 16
    keys = torch.arange(T_k)
    allowed = None if mask is None else mask.expand(*lead, T_q, T_k)
    out = torch.empty(*lead, T_q, V.size(-1), dtype=Q.dtype)
    indices = list(_itertools.product(*map(range, lead)))
    for index in indices:  # the whole matrix first
        for start in range(0, T_q, rows):
            scores = (Q[index][start : start + rows] @ K[index].T) / d_k**0.5
            queue.put(scores.contiguous().numpy().tobytes())
    for index in indices:  # then the softmax, a few rows at a time, in the order they were parked
        for start in range(0, T_q, rows):
            stop = min(start + rows, T_q)
            data = queue.take((stop - start) * row_bytes)
            scores = torch.frombuffer(bytearray(data), dtype=Q.dtype).view(stop - start, T_k)
            keep = torch.ones(stop - start, T_k, dtype=torch.bool)
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
    queue = _Queue()
    try:
        return _via_sockets(Q, K, V, mask, is_causal, queue)
    finally:
        queue.close()
