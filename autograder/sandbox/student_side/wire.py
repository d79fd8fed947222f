"""The messages between the grader and the worker: JSON headers and raw tensor bytes, never pickle.

A message is an 8-byte big-endian length, a JSON header of that length, then the raw bytes
of every tensor the header names. Tensors appear in the header as
``{"$tensor": index, "dtype": "float32", "shape": [2, 3]}``; tuples as ``{"$tuple": [...]}``.
This file imports only the standard library and torch: the worker runs it without the
grader's packages on its path.
"""

from __future__ import annotations

import json
import math
import re
import struct
import time

import torch

DTYPES = {
    name: getattr(torch, name)
    for name in ("float64", "float32", "float16", "bfloat16", "int64", "int32", "uint8", "int8", "bool")
}
_NAMES = {dtype: name for name, dtype in DTYPES.items()}
MAX_MESSAGE = 1 << 30
# bounds checked before a header is decoded, so that a hostile header costs the reader at most this much
MAX_HEADER = 64 << 10  # bytes of JSON
MAX_DEPTH = 8  # nesting of lists and objects; the deepest real message nests 6
MAX_DIMS = 16
# the bytes that decide a header's nesting, one a match (no pattern that can backtrack): brackets, quotes, backslashes
_SIGNIFICANT = re.compile(rb'[\[\]{}"\\]')


class WireError(ValueError):
    """A message that breaks the protocol: wrong type, size or shape."""


def encode(value) -> tuple[bytes, list[bytes]]:
    """A plain value or tensor structure as (JSON header, blobs)."""
    blobs: list[bytes] = []

    def plain(item):
        kind = type(item)  # exact types first: a timed request is ~500 ints, strings, dicts and lists (its slots)
        if kind in _LEAVES:
            return item
        if kind is dict:
            return {str(key): plain(x) for key, x in item.items()}
        if kind is list:
            return [plain(x) for x in item]
        if isinstance(item, torch.Tensor):
            if type(item) is not torch.Tensor and not isinstance(item, torch.nn.Parameter):
                raise WireError(f"a tensor subclass ({type(item).__name__}) cannot be sent")
            if item.dtype not in _NAMES:
                raise WireError(f"tensors of dtype {item.dtype} cannot be sent")
            data = item.detach().to("cpu").contiguous().reshape(-1)
            blobs.append(data.view(torch.uint8).numpy().tobytes() if data.numel() else b"")
            return {"$tensor": len(blobs) - 1, "dtype": _NAMES[item.dtype], "shape": list(item.shape)}
        if isinstance(item, tuple):
            return {"$tuple": [plain(x) for x in item]}
        if isinstance(item, list):
            return [plain(x) for x in item]
        if isinstance(item, dict):
            return {str(key): plain(x) for key, x in item.items()}
        if type(item) is float:
            return item if math.isfinite(item) else {"$float": repr(item)}
        raise WireError(f"a value of type {type(item).__name__} cannot be sent")

    header = json.dumps({"body": plain(value), "sizes": [len(blob) for blob in blobs]}).encode()
    return header, blobs


def nesting(header: bytes) -> int:
    """How deep lists and objects nest in a JSON text, counted without decoding it, in one pass in linear time (a
    backslash in a string escapes the byte after it; brackets in strings do not count)."""
    depth = deepest = 0
    in_string = False
    escaped_at = -1
    for found in _SIGNIFICANT.finditer(header):
        at, byte = found.start(), header[found.start()]
        if at == escaped_at:
            continue
        if in_string:
            escaped_at = at + 1 if byte == 0x5C else escaped_at  # a backslash
            in_string = byte != 0x22  # a quote ends the string
        elif byte == 0x22:
            in_string = True
        elif byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def decode(header: bytes, read_blob, limit: int = MAX_MESSAGE):
    """Rebuild a value from its header, reading each tensor's bytes with read_blob(size).

    The header's size and nesting are checked before it is decoded, and the blobs' sizes
    before any is read: a malformed message costs a WireError, never the reader's memory."""
    if len(header) > MAX_HEADER:
        raise WireError(f"header of {len(header)} bytes (at most {MAX_HEADER})")
    if nesting(header) > MAX_DEPTH:
        raise WireError(f"header nested more than {MAX_DEPTH} levels deep")
    try:
        message = json.loads(header)
        sizes = [int(size) for size in message["sizes"]]
        body = message["body"]
    except (ValueError, KeyError, TypeError, RecursionError) as error:
        raise WireError(f"malformed header: {error}") from None
    if any(size < 0 for size in sizes) or sum(sizes) > limit:
        raise WireError(f"blobs of {sum(sizes)} bytes (at most {limit})")
    blobs = [read_blob(size) for size in sizes]

    def rebuild(item):  # json.loads makes exact lists, dicts, strs, ints, floats, bools and None only
        kind = type(item)
        if kind is str:
            return _text(item)
        if kind is int:
            if not _INT64[0] <= item < _INT64[1]:
                raise WireError("an integer too large for int64")
            return item
        if kind is list:
            return [rebuild(x) for x in item]
        if kind is not dict:
            return item
        if "$tuple" in item:
            if not isinstance(item["$tuple"], list):
                raise WireError("malformed tuple marker")
            return tuple(rebuild(x) for x in item["$tuple"])
        if "$float" in item:
            if item["$float"] not in _SPECIAL_FLOATS:
                raise WireError("malformed float marker")
            return float(item["$float"])
        if "$tensor" in item:
            return _tensor(item, blobs)
        return {_text(key): rebuild(x) for key, x in item.items()}

    return rebuild(body)


_SPECIAL_FLOATS = ("nan", "inf", "-inf")  # what encode writes for a float JSON cannot hold
_INT64 = (-(1 << 63), 1 << 63)
_LEAVES = (str, int, bool, type(None))  # sent as they are


def _text(value: str) -> str:
    """A string every later encode accepts: a lone surrogate (which JSON may carry) becomes U+FFFD."""
    if value.isascii():  # nearly every string: nothing to check
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return value


def _tensor(item: dict, blobs: list[bytes]) -> torch.Tensor:
    name = item.get("dtype")
    dtype = DTYPES.get(name) if type(name) is str else None  # a list or an object is no name: not looked up
    shape = item.get("shape")
    index = item.get("$tensor")
    if dtype is None or not isinstance(shape, list) or not all(type(n) is int and 0 <= n < 1 << 40 for n in shape):
        raise WireError("malformed tensor header")
    if len(shape) > MAX_DIMS:
        raise WireError(f"tensor of {len(shape)} dimensions (at most {MAX_DIMS})")
    if type(index) is not int or not 0 <= index < len(blobs):
        raise WireError("tensor header names a missing blob")
    blob = blobs[index]
    itemsize = torch.empty((), dtype=dtype).element_size()
    if len(blob) != math.prod(shape) * itemsize:
        raise WireError(f"tensor of shape {tuple(shape)} and dtype {dtype} does not fit its {len(blob)} bytes")
    if not blob:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(blob), dtype=torch.uint8).view(dtype).reshape(shape)


def _wait_until(sock, deadline: float | None) -> None:
    """Bound the socket's next operation by ``deadline`` (time.monotonic()); socket.timeout once it has passed."""
    if deadline is not None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the deadline passed")
        sock.settimeout(left)


def bounded(header: bytes, blobs: list[bytes], limit: int = MAX_MESSAGE) -> None:
    """WireError where a message would break the bounds its reader checks (``decode``, ``receive``): header size and
    nesting, and the bytes of its blobs. The sender checks them before it writes anything, so that a message over
    them is refused where it is made, and the reader never meets it (a worker that did would have to stop)."""
    if len(header) > MAX_HEADER:
        raise WireError(f"header of {len(header)} bytes (at most {MAX_HEADER})")
    if nesting(header) > MAX_DEPTH:
        raise WireError(f"header nested more than {MAX_DEPTH} levels deep")
    if sum(len(blob) for blob in blobs) > limit:
        raise WireError(f"blobs of {sum(len(blob) for blob in blobs)} bytes (at most {limit})")


def send(sock, value, deadline: float | None = None, limit: int = MAX_MESSAGE) -> None:
    """Write one message to a connected socket, all of it by ``deadline`` (time.monotonic()) if given; a message over
    the reader's bounds (``bounded``, its blobs within ``limit``) is a WireError before anything is written."""
    header, blobs = encode(value)
    bounded(header, blobs, limit)
    for data in (struct.pack(">Q", len(header)) + header, *blobs):
        _wait_until(sock, deadline)
        sock.sendall(data)


def receive(sock, limit: int = MAX_MESSAGE, deadline: float | None = None):
    """Read one message from a connected socket; EOFError when the peer has gone.

    With ``deadline`` (time.monotonic()), the whole message must have arrived by then, not each
    read: a reply trickled a byte at a time raises TimeoutError like a silent one."""
    total = 0

    def exactly(size: int) -> bytes:
        nonlocal total
        total += size
        if total > limit:
            raise WireError(f"message larger than {limit} bytes")
        chunks, remaining = [], size
        while remaining:
            _wait_until(sock, deadline)
            chunk = sock.recv(min(remaining, 1 << 20))
            if not chunk:
                raise EOFError("the peer closed the connection")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    (length,) = struct.unpack(">Q", exactly(8))
    if length > MAX_HEADER:
        raise WireError(f"header of {length} bytes (at most {MAX_HEADER})")
    return decode(exactly(length), exactly, limit)
