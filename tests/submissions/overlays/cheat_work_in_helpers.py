import mmap
import os

import torch

# A slow attention (it does the work twelve times over, in each of two halves) that hides its cost in two helper
# processes, started at import: the student's own process only copies and waits. A grader that
# reads the CPU clock of that process alone sees it as fast; the cgroup's count sees every helper.
_reference_sdpa = scaled_dot_product_attention
_BUFFER = mmap.mmap(-1, 16 << 20)  # shared with the helpers (inherited across fork)
_REPEAT = 12  # each helper computes its half this many times
_HELPERS = []


def _views(shapes):
    """Q, K, V, mask, output and weights of the given shapes, laid out one after another in the buffer."""
    views, offset = [], 0
    for shape, dtype in shapes:
        count = torch.Size(shape).numel()
        views.append(torch.frombuffer(_BUFFER, dtype=dtype, count=count, offset=offset).view(shape))
        offset += -(-count * dtype.itemsize // 64) * 64
    return views


def _shapes(B, H, T_q, T_k, d):
    return [((B, H, T_q, d), torch.float32), ((B, H, T_k, d), torch.float32), ((B, H, T_k, d), torch.float32),
            ((T_q, T_k), torch.bool), ((B, H, T_q, d), torch.float32), ((B, H, T_q, T_k), torch.float32)]


def _half(tensor, which, axis):
    return tensor.tensor_split(2, dim=axis)[which]


def _axis(B, H):
    return 0 if B > 1 else 1 if H > 1 else 2


def _serve(which, requests, done):
    while True:
        header = os.read(requests, 40)
        if len(header) < 40:
            os._exit(0)
        sizes = [int.from_bytes(header[i:i + 8], "little") for i in range(0, 40, 8)]
        Q, K, V, mask, out, weights = _views(_shapes(*sizes))
        axis = _axis(*sizes[:2])
        q = _half(Q, which, axis)
        k, v = (K, V) if axis == 2 else (_half(K, which, axis), _half(V, which, axis))
        m = _half(mask, which, 0) if axis == 2 else mask
        for _ in range(_REPEAT):
            o, w = _reference_sdpa(q, k, v, m)
        _half(out, which, axis).copy_(o)
        _half(weights, which, axis).copy_(w)
        os.write(done, b".")


for _which in range(2):
    _requests = os.pipe()
    _done = os.pipe()
    if os.fork() == 0:
        torch.set_num_threads(1)
        _serve(_which, _requests[0], _done[1])
    _HELPERS.append((_requests[1], _done[0]))


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    plain = Q.dim() == 4 and Q.dtype == torch.float32 and mask is not None and mask.dim() == 2 and not is_causal
    if not plain or Q.size(0) * Q.size(1) * Q.size(2) < 2:
        return _reference_sdpa(Q, K, V, mask, is_causal)
    sizes = (*Q.shape[:3], K.size(2), Q.size(3))
    q, k, v, m, out, weights = _views(_shapes(*sizes))
    q.copy_(Q), k.copy_(K), v.copy_(V), m.copy_(mask)
    header = b"".join(size.to_bytes(8, "little") for size in sizes)
    for requests, _ in _HELPERS:
        os.write(requests, header)
    for _, done in _HELPERS:
        os.read(done, 1)
    return out.clone(), weights.clone()
