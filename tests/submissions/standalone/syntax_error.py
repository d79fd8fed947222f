def attention_scores(Q, K)
    return Q @ K.transpose(-2, -1)
