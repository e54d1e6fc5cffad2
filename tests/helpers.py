"""Blob builders that bypass the encoder, for feeding the decoder bad input."""

from __future__ import annotations

from typing import Any

import msgpack

SHARED = bytes.fromhex("a4d2")  # sha256("shared")[:2]


def header(
    type_byte: int = 0x01, flags: int = 0, ns: bytes = SHARED, sec: int = 1768471200
) -> bytes:
    return bytes([0x01, flags, type_byte]) + ns + sec.to_bytes(4, "big")


def raw_blob(wire: dict[str, Any] | Any, **kw: Any) -> bytes:
    """Header + msgpack of `wire` exactly in the order given (no canonicalisation)."""
    return header(**kw) + msgpack.packb(wire, use_bin_type=True)


def belief_wire(**changes: Any) -> dict[str, Any]:
    """A canonical short-key belief payload, with changes applied and re-sorted."""
    wire: dict[str, Any] = {
        "c": 0.9,
        "ca": 1768471200000,
        "o": "dark mode",
        "r": "prefers",
        "s": "user",
        "t": "belief",
    }
    wire.update(changes)
    return dict(sorted((k, v) for k, v in wire.items() if v is not None))
