"""The published OMS test vectors (tests/golden/vectors.json, copied from the spec)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

import oms_rdf as oms
from tests.conftest import load_vectors

VECTORS = load_vectors()


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_address(vector: dict[str, Any]) -> None:
    blob = oms.encode(vector["input"])
    assert oms.content_address(blob) == vector["address"]
    assert hashlib.sha256(blob).hexdigest() == vector["address"]


@pytest.mark.parametrize(
    "vector", [v for v in VECTORS if "blob_hex" in v], ids=lambda v: v["name"]
)
def test_vector_blob_bytes(vector: dict[str, Any]) -> None:
    assert oms.encode(vector["input"]).hex() == vector["blob_hex"]


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_round_trip(vector: dict[str, Any]) -> None:
    blob = oms.encode(vector["input"])
    decoded = oms.decode(blob)
    assert decoded == {
        **vector["input"],
        "confidence": float(vector["input"]["confidence"]),
    }
    assert oms.encode(decoded) == blob
    assert oms.Grain.from_blob(blob, address=vector["address"]).blob == blob


def test_type_string_is_preserved() -> None:
    fact, belief = (v for v in VECTORS if v["name"].startswith("v1-"))
    assert oms.decode(bytes.fromhex(fact["blob_hex"]))["type"] == "fact"
    assert oms.decode(bytes.fromhex(belief["blob_hex"]))["type"] == "belief"
    assert fact["address"] != belief["address"]


def test_vector_1_header_bytes() -> None:
    # Spec §21.1 header breakdown: version, flags, Fact, sha256("shared")[:2], seconds.
    blob = oms.encode(VECTORS[0]["input"])
    assert blob[:9] == bytes([0x01, 0x00, 0x01, 0xA4, 0xD2, 0x69, 0x68, 0xBA, 0xA0])


def test_vector_6_policy_keys_are_not_compacted() -> None:
    vector = next(v for v in VECTORS if v["name"] == "v6-protected-fact")
    blob = oms.encode(vector["input"])
    # Spec notes: header 01 00 01 85 6e, and `ip` sorts between `ca` and `ns`
    # with its inner map sorted authorized < mode, full names kept.
    assert blob[:5] == bytes.fromhex("010001856e")
    payload = blob[9:]
    assert (
        payload.index(b"\xa2ca") < payload.index(b"\xa2ip") < payload.index(b"\xa2ns")
    )
    assert payload.index(b"authorized") < payload.index(b"mode")
