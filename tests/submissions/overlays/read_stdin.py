import sys

sys.stdin.read()


def scale_scores(scores, d_k):
    return scores / float(input("d_k? "))
