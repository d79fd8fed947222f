# An attack on the memory measure: the grader's dispatch modes (its op recorder and its memory measure) are taken off
# torch's stack for the whole call, so the full (T_q, T_k) matrix below is never seen, then put back. The source
# reaches torch's internals: flagged by the integrity checks, and the memory check does not vouch for it.
_reference_blockwise = blockwise_attention  # noqa: F821 - the reference's, defined above this overlay


def blockwise_attention(Q, K, V, mask=None, is_causal=False, block_size=16):
    modes = []
    while torch._C._len_torch_dispatch_stack():
        modes.append(torch._C._pop_torch_dispatch_stack(None))
    try:
        everything = Q @ K.transpose(-2, -1)  # (..., T_q, T_k), unseen
        del everything
        return _reference_blockwise(Q, K, V, mask, is_causal, block_size)
    finally:
        for mode in reversed(modes):
            torch._C._push_on_torch_dispatch_stack(mode)
