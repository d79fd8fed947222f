import typing

# An annotation is text that typing compiles: the code guard lets typing compile an annotation's shape (names,
# subscripts, string literals). An f-string's braces hold any expression, so "f'{...}'" carried a lambda of the
# attack's own through typing.get_type_hints (found by a red team: scale_scores replaced, integrity passed). The
# guard now takes a quote right after a name character as no annotation: the file does not load.


class _Box:
    pass


_Box.__annotations__ = {"g": "f'{(g := lambda scores, d_k: scores * 0) and \"\"}int'"}
_ns = {}
typing.get_type_hints(_Box, localns=_ns)
scale_scores = _ns["g"]
