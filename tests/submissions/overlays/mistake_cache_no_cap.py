# The cache grows past max_len without a word.
class KVCache:
    def __init__(self, max_len: int) -> None:
        self.max_len = max_len
        self.K: Tensor | None = None
        self.V: Tensor | None = None

    def append(self, K_new: Tensor, V_new: Tensor) -> tuple[Tensor, Tensor]:
        if self.K is None:
            self.K, self.V = K_new, V_new
        else:
            self.K = torch.cat([self.K, K_new], dim=-2)
            self.V = torch.cat([self.V, V_new], dim=-2)
        return self.K, self.V

    def __len__(self) -> int:
        return 0 if self.K is None else self.K.size(-2)
