"""Canonical OMS blobs: encode, decode, content_address, verify.

A blob is a 9-byte header followed by a canonical MessagePack map (spec §3-§4):
NFC text, no BOM, nulls omitted, keys sorted by their UTF-8 bytes, smallest
integers, float64 only. The stock ``msgpack`` packer writes smallest integers and
float64 and keeps dict order, so this module's job is everything around it: the
field map, key order, value kinds, ranges and the header. Decoding refuses any
payload that is not in canonical form, so a decoded blob always re-encodes to the
identical bytes.

>>> blob = encode({"type": "belief", "subject": "user", "relation": "prefers",
...                "object": "dark mode", "confidence": 1, "created_at": 1768471200000})
>>> decode(blob)["confidence"]
1.0
>>> verify(blob, content_address(blob))
"""

from __future__ import annotations

from .decoding import decode
from .encoding import encode, encode_fields
from .header import (
    DEFAULT_NAMESPACE,
    FLAG_SIGNED,
    HEADER_SIZE,
    MAX_BLOB,
    Header,
    check_address,
    check_size,
    content_address,
    header_for,
    read_header,
    verify,
)
from .walk import EPOCH, MAX_DEPTH, MS, canonical_value

__all__ = [
    "DEFAULT_NAMESPACE",
    "EPOCH",
    "FLAG_SIGNED",
    "HEADER_SIZE",
    "MAX_BLOB",
    "MAX_DEPTH",
    "MS",
    "Header",
    "canonical_value",
    "check_address",
    "check_size",
    "content_address",
    "decode",
    "encode",
    "encode_fields",
    "header_for",
    "read_header",
    "verify",
]
