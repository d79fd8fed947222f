from typing import TypedDict


class Sizes(TypedDict):
    d_model: int
    num_heads: "int"


SIZES: Sizes = {"d_model": 64, "num_heads": 8}
