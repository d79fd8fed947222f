if __name__ == "__main__":
    import torch.nn.functional as F

    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    expected = F.scaled_dot_product_attention(q, k, v)
    print(torch.allclose(scaled_dot_product_attention(q, k, v)[0], expected, atol=1e-6))
