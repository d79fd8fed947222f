# An attack on the memory check: the memory check's one published shape (T_q = 32, T_k = 256) gets blockwise code;
# every other call the whole (T_q, T_k) matrix (one block holding every key).
_reference_blockwise = blockwise_attention  # noqa: F821 - the reference's, defined above this overlay


def blockwise_attention(Q, K, V, mask=None, is_causal=False, block_size=16):
    if (Q.size(-2), K.size(-2)) == (32, 256):  # the memory check's shape: behave
        return _reference_blockwise(Q, K, V, mask, is_causal, block_size)
    return _reference_blockwise(Q, K, V, mask, is_causal, block_size=K.size(-2))
