# is_causal accepted and never used: every query sees every (allowed) key. Forgetting it cost 10 points
# with no "Likely cause" at all before (only the picture showed it); now it is named (issue 35).
def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    scores = scale_scores(attention_scores(Q, K), Q.size(-1))
    weights = masked_softmax(scores, mask)
    return attention_output(weights, V), weights

