def scale_scores(scores, d_k):
    return scores
