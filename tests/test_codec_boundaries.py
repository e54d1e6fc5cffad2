"""MessagePack width boundaries: each value takes the smallest form of the MessagePack spec.

The expected bytes are built here from the MessagePack format table, not by msgpack.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

import oms_rdf as oms

INTS = [
    0,
    1,
    31,
    32,
    127,
    128,
    255,
    256,
    2**15 - 1,
    2**15,
    2**16 - 1,
    2**16,
    2**31 - 1,
    2**31,
    2**32 - 1,
    2**32,
    2**63 - 1,
    2**63,
    2**64 - 1,
    -1,
    -31,
    -32,
    -33,
    -127,
    -128,
    -129,
    -(2**15),
    -(2**15) - 1,
    -(2**31),
    -(2**31) - 1,
    -(2**63),
]
SIZES = [0, 1, 15, 16, 31, 32, 255, 256, 65535, 65536]


def msgpack_int(n: int) -> bytes:
    if 0 <= n <= 0x7F:
        return bytes([n])
    if -32 <= n < 0:
        return struct.pack(">b", n)
    if 0 <= n <= 0xFF:
        return b"\xcc" + struct.pack(">B", n)
    if 0 <= n <= 0xFFFF:
        return b"\xcd" + struct.pack(">H", n)
    if 0 <= n <= 0xFFFFFFFF:
        return b"\xce" + struct.pack(">I", n)
    if n >= 0:
        return b"\xcf" + struct.pack(">Q", n)
    if n >= -(2**7):
        return b"\xd0" + struct.pack(">b", n)
    if n >= -(2**15):
        return b"\xd1" + struct.pack(">h", n)
    if n >= -(2**31):
        return b"\xd2" + struct.pack(">i", n)
    return b"\xd3" + struct.pack(">q", n)


def str_header(n: int) -> bytes:
    if n <= 31:
        return bytes([0xA0 | n])
    if n <= 0xFF:
        return b"\xd9" + bytes([n])
    if n <= 0xFFFF:
        return b"\xda" + struct.pack(">H", n)
    return b"\xdb" + struct.pack(">I", n)


def container_header(n: int, fix: int, c16: int) -> bytes:
    if n <= 15:
        return bytes([fix | n])
    if n <= 0xFFFF:
        return bytes([c16]) + struct.pack(">H", n)
    return bytes([c16 + 1]) + struct.pack(">I", n)


def payload_with(belief_fields: dict[str, Any], **extra: Any) -> bytes:
    blob = oms.encode({**belief_fields, **extra})
    assert oms.encode(oms.decode(blob)) == blob
    return blob[9:]


@pytest.mark.parametrize("n", INTS)
def test_int_smallest_form(belief_fields: dict[str, Any], n: int) -> None:
    blob = oms.encode({**belief_fields, "context": {"n": n}})
    assert b"\xa3ctx\x81\xa1n" + msgpack_int(n) in blob[9:]
    assert oms.decode(blob)["context"]["n"] == n


@pytest.mark.parametrize("n", [v for v in INTS if v >= 0])
def test_count_field_smallest_form(belief_fields: dict[str, Any], n: int) -> None:
    payload = payload_with(belief_fields, success_count=n)
    assert b"\xa2sc" + msgpack_int(n) in payload


def test_epoch_ms_uses_uint64(belief_fields: dict[str, Any]) -> None:
    # Spec §4.2: epoch-ms values above 2^32 are uint64 (cf), as in the vectors.
    payload = payload_with(belief_fields)
    assert b"\xa2ca\xcf\x00\x00\x01\x9b\xc1\x19\x01\x00" in payload


@pytest.mark.parametrize("n", SIZES)
def test_string_length_boundaries(belief_fields: dict[str, Any], n: int) -> None:
    text = "x" * n
    payload = payload_with(belief_fields, context={"k": text})
    assert b"\xa1k" + str_header(n) + text.encode() in payload


@pytest.mark.parametrize("n", SIZES)
def test_array_length_boundaries(belief_fields: dict[str, Any], n: int) -> None:
    payload = payload_with(belief_fields, structural_tags=["t"] * n)
    assert b"\xa4tags" + container_header(n, 0x90, 0xDC) + b"\xa1t" * n in payload


@pytest.mark.parametrize("n", [0, 1, 15, 16, 255, 256])
def test_map_size_boundaries(belief_fields: dict[str, Any], n: int) -> None:
    context = {f"k{i:05d}": i % 100 for i in range(n)}
    payload = payload_with(belief_fields, context=context)
    assert b"\xa3ctx" + container_header(n, 0x80, 0xDE) in payload


def test_large_map_boundary(belief_fields: dict[str, Any]) -> None:
    n = 65536
    context = {f"k{i:06d}": 0 for i in range(n)}
    payload = payload_with(belief_fields, context=context)
    assert b"\xa3ctx\xdf" + struct.pack(">I", n) in payload


@pytest.mark.parametrize("n", [0, 1, 255, 256, 65535, 65536])
def test_bytes_use_bin_family(belief_fields: dict[str, Any], n: int) -> None:
    data = b"\x00" * n
    payload = payload_with(belief_fields, context={"b": data})
    if n <= 0xFF:
        head = b"\xc4" + bytes([n])
    elif n <= 0xFFFF:
        head = b"\xc5" + struct.pack(">H", n)
    else:
        head = b"\xc6" + struct.pack(">I", n)
    assert b"\xa1b" + head + data in payload


@pytest.mark.parametrize("value", [0.0, -0.0, 1.0, 0.1, 1e308, -2.5, 5e-324])
def test_floats_are_float64(belief_fields: dict[str, Any], value: float) -> None:
    payload = payload_with(belief_fields, context={"f": value})
    assert b"\xa1f\xcb" + struct.pack(">d", value) in payload


@pytest.mark.parametrize("given", [1, 0, True])
def test_float64_fields_take_ints(belief_fields: dict[str, Any], given: int) -> None:
    if given is True:
        with pytest.raises(oms.SchemaError):
            oms.encode({**belief_fields, "confidence": given})
        return
    payload = payload_with(belief_fields, confidence=given)
    assert b"\xa1c\xcb" + struct.pack(">d", float(given)) in payload


def test_bool_stays_bool(belief_fields: dict[str, Any]) -> None:
    payload = payload_with(belief_fields, context={"a": True, "b": False, "c": 1})
    assert b"\xa1a\xc3\xa1b\xc2\xa1c\x01" in payload
