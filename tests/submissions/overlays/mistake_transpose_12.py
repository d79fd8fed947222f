def attention_scores(Q, K):
    return Q @ K.transpose(1, 2)
