# An attack on the memory check: the whole (T_q, T_k) matrix of scores kept as int32 bits (a measure that counts only
# floating-point storages does not see it), filled block by block and read back block by block as float32.
_reference_blockwise = blockwise_attention  # noqa: F821 - the reference's, defined above this overlay


def blockwise_attention(Q, K, V, mask=None, is_causal=False, block_size=16):
    T_q, T_k = Q.size(-2), K.size(-2)
    bits = torch.empty(*Q.shape[:-2], T_q, T_k, dtype=torch.int32)  # (..., T_q, T_k): the whole matrix, as bits
    with torch.no_grad():
        for start in range(0, T_k, block_size):
            block = Q.float() @ K[..., start : start + block_size, :].float().transpose(-2, -1)
            bits[..., start : start + block_size] = block.view(torch.int32)
        bits[..., :block_size].clone().view(torch.float32).amax()  # read back as floats, one block at a time
    return _reference_blockwise(Q, K, V, mask, is_causal, block_size)
