# An attack on the memory check's measure of what a call adds to the process's peak: 256 MiB taken and touched at
# import and held between calls; a call writes the whole (T_q, T_k) matrix of scores into that room (out=, in place)
# and computes the softmax there. Nothing new is taken while the call runs, but every page of the matrix is touched:
# the grader's count of the pages a call reads or writes (sandbox/memory.py) fails it.
import math as _math

_reference_blockwise = blockwise_attention  # noqa: F821 - the reference's, defined above this overlay
_room = torch.ones(64 << 20)  # 256 MiB of float32, touched


def blockwise_attention(Q, K, V, mask=None, is_causal=False, block_size=16):
    T_q, T_k = Q.size(-2), K.size(-2)
    count = Q.shape[:-1].numel() * T_k
    if Q.requires_grad or K.requires_grad or V.requires_grad or Q.dtype != torch.float32 or count > _room.numel():
        return _reference_blockwise(Q, K, V, mask, is_causal, block_size)
    scores = _room[:count].view(*Q.shape[:-1], T_k)  # (..., T_q, T_k), in the room taken at import
    torch.matmul(Q, K.transpose(-2, -1), out=scores)
    scores.mul_(1.0 / _math.sqrt(Q.size(-1)))
    keys = torch.arange(T_k)
    for start in range(0, T_q, 64):  # masks a few rows at a time: nothing of (T_q, T_k) besides the room
        rows = scores[..., start : start + 64, :]
        if is_causal:
            rows.masked_fill_(keys > torch.arange(start, min(start + 64, T_q))[:, None], float("-inf"))
        if mask is not None:
            rows.masked_fill_(~mask[..., start : start + 64, :], float("-inf"))
    top = scores.amax(dim=-1, keepdim=True)
    scores.sub_(top.masked_fill(top == float("-inf"), 0.0)).exp_()
    total = scores.sum(dim=-1, keepdim=True)
    return (scores @ V) / torch.where(total > 0, total, torch.ones_like(total))
