from __future__ import annotations

import pickle
from datetime import UTC, datetime
from typing import Any

import pytest

import oms_rdf as oms
from oms_rdf.codec.grain import now_ms


def test_belief_writes_only_given_fields() -> None:
    g = oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1737000000000)
    assert dict(g.fields) == {
        "type": "belief",
        "subject": "alice",
        "relation": "works_at",
        "object": "Acme",
        "confidence": 0.9,
        "created_at": 1737000000000,
    }
    assert g.type == "belief" and g.type_byte == 0x01
    assert g.namespace == "shared"  # the default, not written into the blob
    assert b"ns" not in g.blob[9:]


def test_belief_created_at_defaults_to_now() -> None:
    before = now_ms()
    g = oms.Belief("a", "b", "c", 0.5)
    after = now_ms()
    assert before <= g.created_at <= after


def test_belief_accepts_datetimes_and_extra_fields() -> None:
    when = datetime(2025, 1, 1, tzinfo=UTC)
    g = oms.Belief(
        "a", "b", "c", 1, created_at=when, valid_from=when, epistemic_status="probable"
    )
    assert g.created_at == 1735689600000
    assert g["valid_from"] == 1735689600000
    assert g["epistemic_status"] == "probable"
    assert g["confidence"] == 1.0


def test_grain_is_immutable_and_hashable() -> None:
    g = oms.Belief("a", "b", "c", 0.5, created_at=0)
    with pytest.raises(AttributeError):
        g.blob = b""  # type: ignore[misc]
    with pytest.raises(TypeError):
        g.fields["subject"] = "x"  # type: ignore[index]
    copy = g.to_dict()
    copy["subject"] = "x"
    assert g["subject"] == "a"
    assert {g, oms.Grain.from_blob(g.blob)} == {g}
    assert pickle.loads(pickle.dumps(g)) == g
    assert repr(g).startswith("<Grain belief ")


def test_from_blob_verifies_address() -> None:
    g = oms.Belief("a", "b", "c", 0.5, created_at=0)
    assert oms.Grain.from_blob(g.blob, address=g.address) == g
    with pytest.raises(oms.IntegrityError):
        oms.Grain.from_blob(g.blob, address="0" * 64)


def test_from_blob_keeps_foreign_header_hints() -> None:
    # A foreign writer that hashed "" for an absent namespace: the blob is kept as is.
    g = oms.Belief("a", "b", "c", 0.5, created_at=0)
    foreign = g.blob[:3] + bytes.fromhex("e3b0") + g.blob[5:]
    kept = oms.Grain.from_blob(foreign)
    assert kept.blob == foreign
    assert kept.address != g.address
    assert dict(kept.fields) == dict(g.fields)


def test_unknown_type_with_type_byte() -> None:
    fields: dict[str, Any] = {
        "type": "acme.note",
        "created_at": 1000,
        "subject": "x",
        "body": "y",
    }
    with pytest.raises(oms.EncodeError) as info:
        oms.Grain.from_dict(fields)
    assert info.value.code == oms.ErrorCode.UNKNOWN_TYPE
    g = oms.Grain.from_dict(fields, type_byte=0xF0)
    assert g.type_byte == 0xF0
    assert b"\xa1s\xa1x" in g.blob  # core fields are still compacted
    assert oms.decode(g.blob) == fields
    assert oms.encode(oms.decode(g.blob), type_byte=0xF0) == g.blob


def test_trigger_enabled_is_always_emitted() -> None:
    g = oms.Grain.from_dict(
        {"type": "trigger", "kind": "manual", "workflow": "w", "created_at": 0}
    )
    assert g["enabled"] is True
    assert b"\xa4tena\xc3" in g.blob
