# Right with a batch and a head axis, broken on 2-D inputs only (transpose(1, 2) has no axis 2 there): not the
# transpose of axes 1 and 2, which breaks on a head axis too, so that mistake is not named
def attention_scores(Q, K):
    if Q.dim() == 2:
        return Q @ K.transpose(1, 2)
    return Q @ K.transpose(-2, -1)
