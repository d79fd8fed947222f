from dataclasses import dataclass, field


@dataclass
class AttentionConfig:
    """The sizes of one attention layer."""

    d_model: int = 64
    num_heads: int = 8
    extra: list = field(default_factory=list)

    @property
    def d_head(self) -> int:
        return self.d_model // self.num_heads


_CONFIG = AttentionConfig()
