# The cache grows on the head axis (-3, dim=1 of a (B, H_kv, T, d) tensor) instead of the time axis (-2).
class KVCache:
    def __init__(self, max_len: int) -> None:
        self.max_len = max_len
        self.K: Tensor | None = None
        self.V: Tensor | None = None

    def append(self, K_new: Tensor, V_new: Tensor) -> tuple[Tensor, Tensor]:
        if len(self) + K_new.size(-2) > self.max_len:
            raise ValueError(f"the cache is full: max_len = {self.max_len}")
        if self.K is None:
            self.K, self.V = K_new, V_new
        else:
            self.K = torch.cat([self.K, K_new], dim=-3)
            self.V = torch.cat([self.V, V_new], dim=-3)
        return self.K, self.V

    def __len__(self) -> int:
        return 0 if self.K is None else self.K.size(-2)
