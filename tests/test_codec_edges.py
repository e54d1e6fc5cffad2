"""Codec edge cases: each rule of the spec at the edge where only one line decides it."""

from __future__ import annotations

import math
import struct
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import msgpack
import pytest

from oms_rdf.codec import MAX_BLOB, check_address, content_address, decode, encode, fast
from oms_rdf.codec.fieldmap import Field, Kind, Table
from oms_rdf.codec.grain import Belief, Grain
from oms_rdf.codec.schema import BELIEF
from oms_rdf.codec.signing import (
    b58encode,
    disclose,
    generate_key,
    parse_did,
    sign_supersession,
    supersession_draft,
    verify_disclosed,
    verify_supersession,
)
from oms_rdf.errors import (
    DecodeError,
    EncodeError,
    ErrorCode,
    IntegrityError,
    SchemaError,
    SignatureError,
)
from tests.helpers import belief_wire, header, raw_blob

BELIEF_FIELDS: dict[str, Any] = {
    "type": "belief",
    "subject": "user",
    "relation": "prefers",
    "object": "dark mode",
    "confidence": 0.9,
    "created_at": 1768471200000,
}


def belief(**extra: Any) -> dict[str, Any]:
    return {**BELIEF_FIELDS, **extra}


def raw_map(pairs: list[tuple[str, bytes]]) -> bytes:
    """A payload map of (key, already packed value) pairs in the order given."""
    body = b"".join(msgpack.packb(k) + v for k, v in pairs)
    return bytes([0x80 | len(pairs)]) + body


# --- decoding ---------------------------------------------------------------------


def test_decode_takes_any_bytes_like_and_refuses_the_rest() -> None:
    blob = encode(BELIEF_FIELDS)
    assert decode(bytearray(blob)) == decode(memoryview(blob)) == decode(blob)
    with pytest.raises(DecodeError, match="expected bytes, found str"):
        decode(blob.hex())  # type: ignore[arg-type]


def test_a_blob_over_the_limit_is_refused_before_parsing() -> None:
    with pytest.raises(DecodeError) as info:
        decode(header() + bytes(MAX_BLOB))
    assert info.value.code == ErrorCode.RANGE


def test_unsorted_keys_are_named_when_another_fault_comes_with_them() -> None:
    # Keys out of order and a non-minimal integer (0xcc 0x01 for 1): the order is
    # what the spec's §4.1 names.
    wire = belief_wire()
    pairs = [(k, msgpack.packb(v)) for k, v in reversed(wire.items())]
    pairs.append(("cl", b"\xcc\x01"))
    with pytest.raises(DecodeError, match=r"not in canonical order.*spec §4\.1"):
        decode(header() + raw_map(pairs))


@pytest.mark.parametrize("where", ["c", "ctx"])
def test_a_float32_nan_is_float_invalid_not_corrupt(where: str) -> None:
    nan32 = b"\xca" + struct.pack(">f", math.nan)
    value = nan32 if where == "c" else b"\x91" + nan32  # ctx: {"a": [NaN]}
    wire = belief_wire()
    pairs = [(k, msgpack.packb(v)) for k, v in wire.items() if k != "c"]
    if where == "c":
        pairs.append(("c", value))
    else:
        pairs.append(("c", msgpack.packb(0.9)))
        pairs.append(("ctx", b"\x81" + msgpack.packb("a") + value))
    pairs.sort()
    with pytest.raises(DecodeError) as info:
        decode(header() + raw_map(pairs))
    assert info.value.code == ErrorCode.FLOAT_INVALID


def test_nulls_inside_arrays_are_kept_both_ways() -> None:
    blob = encode(belief(context={"a": [None, 1]}))
    assert decode(blob)["context"] == {"a": [None, 1]}
    assert decode(raw_blob(belief_wire(ctx={"a": [None]})))["context"] == {"a": [None]}


def test_an_ext_value_in_a_nested_map_is_corrupt() -> None:
    blob = raw_blob(belief_wire(ctx={"a": msgpack.ExtType(5, b"x")}))
    with pytest.raises(DecodeError, match="ExtType values are outside") as info:
        decode(blob)
    assert info.value.code == ErrorCode.CORRUPT and info.value.path == "$.context.a"


def test_a_non_text_key_in_a_nested_map() -> None:
    with pytest.raises(DecodeError, match="map keys are text") as info:
        decode(raw_blob(belief_wire(ctx={1: "x"})))
    assert info.value.code == ErrorCode.CORRUPT
    with pytest.raises(SchemaError, match="map keys are text"):
        encode(belief(context={1: "x"}))


# --- encoding ---------------------------------------------------------------------


def test_bytes_like_and_mapping_values_are_converted() -> None:
    grain = belief(
        context={
            "b": bytearray(b"x"),
            "m": memoryview(b"y"),
            "p": MappingProxyType({"k": 1}),
        }
    )
    assert decode(encode(grain))["context"] == {"b": b"x", "m": b"y", "p": {"k": 1}}


def test_a_datetime_outside_a_time_field_is_refused() -> None:
    with pytest.raises(SchemaError, match="datetime is converted only in time fields"):
        encode(belief(context={"when": datetime(2026, 1, 1, tzinfo=UTC)}))


@pytest.mark.parametrize(
    ("extra", "code", "fragment"),
    [
        ({"requires_human_review": "yes"}, ErrorCode.SCHEMA, "expected a boolean"),
        ({"context": 5}, ErrorCode.SCHEMA, "expected a map"),
        ({"category": "x"}, ErrorCode.SCHEMA, "expected an integer"),
        ({"consolidation_level": -1}, ErrorCode.RANGE, "count -1 is negative"),
        ({"structural_tags": "pii:x"}, ErrorCode.SCHEMA, "expected an array"),
        ({"context": {"a": [[[[]]]] * 1}}, None, None),
    ],
)
def test_field_kinds(
    extra: dict[str, Any], code: ErrorCode | None, fragment: str | None
) -> None:
    if code is None:
        assert decode(encode(belief(**extra)))["context"] == extra["context"]
        return
    with pytest.raises(SchemaError, match=fragment) as info:
        encode(belief(**extra))
    assert info.value.code == code


def test_a_negative_nonneg_float() -> None:
    obs = {
        "type": "observation",
        "observer_id": "cam",
        "observer_type": "sensor",
        "created_at": 1000,
        "compression_ratio": -1.0,
    }
    with pytest.raises(SchemaError, match="is negative") as info:
        encode(obs)
    assert info.value.code == ErrorCode.RANGE


def test_the_fast_path_and_the_walk_write_the_same_float_bytes() -> None:
    obs = {
        "type": "observation",
        "observer_id": "cam",
        "observer_type": "sensor",
        "created_at": 1000,
    }
    # 0.5 as given takes the fast path; the int 1 takes the walk, which writes 1.0.
    assert encode({**obs, "compression_ratio": 1}) == encode(
        {**obs, "compression_ratio": 1.0}
    )
    assert decode(encode({**obs, "compression_ratio": 0.5}))["compression_ratio"] == 0.5


def test_byte_and_count_fields_on_the_fast_path() -> None:
    blob = encode(belief(category=7, consolidation_level=2))
    assert decode(blob)["category"] == 7 and decode(blob)["consolidation_level"] == 2
    with pytest.raises(SchemaError) as info:
        encode(belief(category=256))
    assert info.value.code == ErrorCode.RANGE


def test_a_list_field_keeps_any_values() -> None:
    fields = decode(encode(belief(supersession_auth=[1, "a", b"b"])))
    assert fields["supersession_auth"] == [1, "a", b"b"]


def test_nested_arrays_deeper_than_32_levels() -> None:
    value: Any = 1
    for _ in range(33):
        value = [value]
    with pytest.raises(EncodeError, match="nesting deeper than 32") as info:
        encode(belief(context={"a": value}))
    assert info.value.code == ErrorCode.CORRUPT


def test_a_grain_over_the_blob_limit_is_refused() -> None:
    with pytest.raises(EncodeError) as info:
        encode(belief(context={"big": "x" * MAX_BLOB}))
    assert info.value.code == ErrorCode.RANGE


def test_a_known_type_with_another_type_byte() -> None:
    with pytest.raises(EncodeError, match="type byte 0x01, not 0x0e") as info:
        encode(BELIEF_FIELDS, type_byte=0x0E)
    assert info.value.code == ErrorCode.CORRUPT


def test_an_application_type_needs_created_at() -> None:
    with pytest.raises(SchemaError, match="created_at") as info:
        encode({"type": "x-app"}, type_byte=0x0E)
    assert info.value.path == "$.created_at"


def test_a_failed_pack_leaves_the_packer_clean() -> None:
    with pytest.raises(TypeError):
        fast.pack({"a": object()})
    assert fast.pack({"a": 1}) == msgpack.packb({"a": 1})


def test_plans_are_forgotten_past_the_limit_and_still_right() -> None:
    for i in range(1100):
        blob = encode(belief(**{f"x{i}": "v"}))
        assert decode(blob)[f"x{i}"] == "v"
    for plans in fast._plans.values():
        assert len(plans) <= 1024
    assert fast.plan_for(BELIEF, tuple(BELIEF_FIELDS), encoding=True) is not None


def test_a_table_that_is_no_bijection_is_refused() -> None:
    with pytest.raises(AssertionError, match="not a bijection"):
        Table((Field("a", "x", Kind.STR), Field("b", "x", Kind.STR)))


# --- rules ------------------------------------------------------------------------


def test_event_rules() -> None:
    event = {"type": "event", "created_at": 1000}
    with pytest.raises(SchemaError) as info:
        encode({**event, "content": ""})
    assert info.value.code == ErrorCode.EMPTY and info.value.path == "$.content"
    said = {**event, "subject": "a", "relation": "b", "object": "c"}
    assert decode(encode(said))["object"] == "c"


def test_a_recommendation_analyzer_needs_a_text_id() -> None:
    rec = {
        "type": "recommendation",
        "created_at": 1000,
        "target_ref": "t",
        "analyzer": {"id": 5},
        "summary": {"s": "x"},
        "dedup_key": "k",
        "proposal_cal": "p",
    }
    with pytest.raises(SchemaError, match=r"analyzer\.id") as info:
        encode(rec)
    assert info.value.path == "$.analyzer.id"


# --- header and grain -------------------------------------------------------------


def test_an_address_that_is_no_text() -> None:
    with pytest.raises(IntegrityError) as info:
        check_address(5)
    assert info.value.code == ErrorCode.HASH_FORMAT


def test_a_stored_grain_decodes_on_first_access_and_checks_its_address() -> None:
    g = Belief("a", "b", "c", 0.5, created_at=0, context={"l": [1, {"m": [2]}]})
    again = Grain.stored(g.blob, g.address)
    assert again.fields == g.fields and again.header == g.header
    copy = again.to_dict()
    copy["context"]["l"].append(3)  # a mutable copy: the grain keeps its own
    assert again.fields["context"]["l"] == [1, {"m": [2]}]
    with pytest.raises(IntegrityError) as info:
        Grain.stored(g.blob, "0" * 64)
    assert info.value.code == ErrorCode.INTEGRITY


def test_a_grain_in_a_notebook_is_an_escaped_table() -> None:
    g = Belief("<a>", "b", "c", 0.5, created_at=0)
    html = g._repr_html_()
    assert html.startswith("<table><caption>belief <code>" + g.address)
    assert "&lt;a&gt;" in html and "<a>" not in html


# --- signing ----------------------------------------------------------------------


def test_did_keys_that_are_not_ed25519_keys() -> None:
    with pytest.raises(SignatureError, match="not a complete varint"):
        parse_did("did:key:z" + b58encode(b"\x80" * 9))
    with pytest.raises(SignatureError, match=r"32 bytes; .* carries 31"):
        parse_did("did:key:z" + b58encode(b"\xed\x01" + bytes(31)))


def test_signing_keys() -> None:
    key = generate_key(seed=bytes(32))
    assert key.private_bytes() == bytes(32)
    assert repr(key) == f"<SigningKey {key.did}>"
    with pytest.raises(SignatureError, match="seed has 32 bytes; found 31"):
        generate_key(seed=bytes(31))


def test_supersession_co_signatures() -> None:
    key = generate_key(seed=bytes(32))
    old = content_address(encode(BELIEF_FIELDS))
    new = belief(object="light mode", supersession_auth=[b"x"])
    entry = sign_supersession(old, new, key, iat=0)
    draft = supersession_draft(new)
    assert draft == content_address(encode({**new, "supersession_auth": None}))
    assert verify_supersession(entry, old, draft) == key.did
    with pytest.raises(SignatureError, match="signed another supersession"):
        verify_supersession(entry, draft, old)
    with pytest.raises(SignatureError, match="COSE_Sign1 bytes; found str"):
        verify_supersession(entry.hex(), old, draft)


def test_a_value_the_view_did_not_elide() -> None:
    view = disclose(BELIEF_FIELDS, "0" * 64, ["subject"])
    with pytest.raises(SchemaError, match="does not elide 'object'") as info:
        verify_disclosed(view, "object", "dark mode")
    assert info.value.path == "$._elided.object"


def test_unsorted_keys_in_a_nested_map_are_corrupt() -> None:
    with pytest.raises(DecodeError, match="'a' after 'b'") as info:
        decode(raw_blob(belief_wire(ctx={"b": 1, "a": 2})))
    assert info.value.code == ErrorCode.CORRUPT and info.value.path == "$.context"


def test_an_array_of_maps_holds_only_maps() -> None:
    with pytest.raises(SchemaError, match="expected a map, found str") as info:
        encode(belief(provenance_chain=["x"]))
    assert info.value.path == "$.provenance_chain[0]"
