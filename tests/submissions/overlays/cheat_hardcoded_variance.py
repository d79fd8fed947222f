def dot_product_variance(d_k, num_samples=10000, generator=None):
    return float(d_k)
