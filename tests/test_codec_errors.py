"""Malformed input: each failure has its spec code, and only OmsError ever escapes."""

from __future__ import annotations

import math
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

import oms_rdf as oms
from oms_rdf import (
    DecodeError,
    EncodeError,
    ErrorCode,
    IntegrityError,
    OmsError,
    SchemaError,
)
from tests.fuzz.targets import round_trip
from tests.helpers import belief_wire, header, raw_blob

GOOD = raw_blob(belief_wire())


def code_of(blob: bytes) -> ErrorCode:
    with pytest.raises(OmsError) as info:
        oms.decode(blob)
    return info.value.code


def test_the_good_blob_is_good() -> None:
    assert oms.decode(GOOD)["subject"] == "user"
    assert oms.encode(oms.decode(GOOD)) == GOOD


@pytest.mark.parametrize(
    ("blob", "code"),
    [
        (b"", ErrorCode.TOO_SHORT),
        (GOOD[:9], ErrorCode.TOO_SHORT),
        (header(), ErrorCode.TOO_SHORT),
        (b"\x02" + GOOD[1:], ErrorCode.VERSION),
        (b"\x00" + GOOD[1:], ErrorCode.VERSION),
        (GOOD[:-1], ErrorCode.CORRUPT),  # truncated payload
        (GOOD[:12], ErrorCode.CORRUPT),
        (GOOD + b"\x00", ErrorCode.CORRUPT),  # trailing byte
        (GOOD + GOOD[9:], ErrorCode.CORRUPT),
        (header() + b"\xc1", ErrorCode.CORRUPT),  # reserved msgpack byte
        (raw_blob([1, 2, 3]), ErrorCode.NOT_MAP),
        (raw_blob("belief"), ErrorCode.NOT_MAP),
        (raw_blob(None), ErrorCode.NOT_MAP),
        (raw_blob({"ca": 1768471200000}), ErrorCode.NO_TYPE),
        (raw_blob(belief_wire(), type_byte=0x02), ErrorCode.CORRUPT),  # byte != type
        (raw_blob(belief_wire(), type_byte=0xF0), ErrorCode.CORRUPT),
        (raw_blob(belief_wire(t="event"), type_byte=0x01), ErrorCode.CORRUPT),
        (raw_blob(belief_wire(c=math.nan)), ErrorCode.FLOAT_INVALID),
        (raw_blob(belief_wire(c=math.inf)), ErrorCode.FLOAT_INVALID),
        (raw_blob(belief_wire(ctx={"x": -math.inf})), ErrorCode.FLOAT_INVALID),
        (raw_blob(belief_wire(s="\ufeffuser")), ErrorCode.CORRUPT),  # BOM
        (
            raw_blob(belief_wire(ctx={"\ufeffk": "v"})),
            ErrorCode.CORRUPT,
        ),  # BOM in a key
        (raw_blob(belief_wire(tags=["phi:diagnosis"])), ErrorCode.SENSITIVITY_MISMATCH),
        (
            raw_blob(belief_wire(tags=["pii:email"]), flags=0x40),
            ErrorCode.SENSITIVITY_MISMATCH,
        ),
        (raw_blob(belief_wire(tags=["reg:sox"])), ErrorCode.SENSITIVITY_MISMATCH),
        (raw_blob(belief_wire(c=1.5)), ErrorCode.RANGE),
        (raw_blob(belief_wire(c=-0.1)), ErrorCode.RANGE),
        (raw_blob(belief_wire(im=1.01)), ErrorCode.RANGE),
        (raw_blob(belief_wire(sc=-1)), ErrorCode.RANGE),
        (raw_blob(belief_wire(fc=-3)), ErrorCode.RANGE),
        (raw_blob(belief_wire(pc=[{"weight": 2.0}])), ErrorCode.RANGE),
        (raw_blob(belief_wire(s="")), ErrorCode.EMPTY),
        (raw_blob(belief_wire(r="")), ErrorCode.EMPTY),
        (raw_blob(belief_wire(s=None)), ErrorCode.SCHEMA),  # missing subject
        (raw_blob(belief_wire(c=None)), ErrorCode.SCHEMA),
        (raw_blob(belief_wire(ca=None)), ErrorCode.SCHEMA),
        (raw_blob(belief_wire(s=7)), ErrorCode.SCHEMA),
        (raw_blob(belief_wire(df=["ABC"])), ErrorCode.HASH_LENGTH),
        (raw_blob(belief_wire(df=["A" * 64])), ErrorCode.HASH_FORMAT),
    ],
)
def test_decode_error_codes(blob: bytes, code: ErrorCode) -> None:
    assert code_of(blob) == code


def test_duplicate_keys_are_corrupt() -> None:
    # fixmap(2) {"t": "belief", "t": "belief"}: msgpack would silently keep one.
    blob = header() + b"\x82\xa1t\xa6belief\xa1t\xa6belief"
    with pytest.raises(DecodeError, match="duplicate map key 't'") as info:
        oms.decode(blob)
    assert info.value.code == ErrorCode.CORRUPT


def test_duplicate_keys_in_a_nested_map_are_corrupt() -> None:
    wire = msgpack.packb(belief_wire(ctx={}), use_bin_type=True)
    blob = header() + wire.replace(b"\xa3ctx\x80", b"\xa3ctx\x82\xa1k\x01\xa1k\x02")
    assert code_of(blob) == ErrorCode.CORRUPT


def test_not_map_is_checked_before_duplicates() -> None:
    # An array holding a map with duplicate keys: the payload is still "not a map".
    blob = header() + b"\x91\x82\xa1a\x01\xa1a\x02"
    assert code_of(blob) == ErrorCode.NOT_MAP


def test_version_in_message() -> None:
    with pytest.raises(DecodeError, match="0x07"):
        oms.decode(b"\x07" + GOOD[1:])


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (b"\x81\xc1\x01", "0xc1 is reserved"),
        (b"\x81\x81\x01\x02\x03", "map or array used as a map key"),
        (b"\x91" * 200_000 + b"\x01", "nesting deeper"),
    ],
)
def test_a_payload_msgpack_cannot_read_says_why(payload: bytes, why: str) -> None:
    """msgpack names some faults by type only; the message says what it means."""
    with pytest.raises(DecodeError, match=why) as info:
        oms.decode(header() + payload)
    assert info.value.code == ErrorCode.CORRUPT


def test_an_envelope_given_as_a_blob_is_named() -> None:
    with pytest.raises(DecodeError, match="COSE_Sign1 envelope") as info:
        oms.decode(b"\xd2\x84" + GOOD[2:])
    assert info.value.code == ErrorCode.VERSION


@pytest.mark.parametrize(
    ("wire", "fragment"),
    [
        (dict(reversed(belief_wire().items())), "canonical order"),
        ({**belief_wire(), "ca": 1768471200000}, None),  # canonical: sanity check below
    ],
)
def test_unsorted_keys_are_corrupt(wire: dict[str, Any], fragment: str | None) -> None:
    blob = raw_blob(wire)
    if fragment is None:
        assert oms.decode(blob)
        return
    with pytest.raises(DecodeError, match=fragment):
        oms.decode(blob)


def test_non_minimal_integer_is_corrupt() -> None:
    # success_count 5 as uint16 (cd 00 05) instead of positive fixint 05.
    wire = msgpack.packb(belief_wire(sc=5), use_bin_type=True)
    blob = header() + wire.replace(b"\xa2sc\x05", b"\xa2sc\xcd\x00\x05")
    with pytest.raises(DecodeError, match="smallest form") as info:
        oms.decode(blob)
    assert info.value.path is not None and info.value.path.startswith("payload[")


def test_float32_is_corrupt() -> None:
    wire = msgpack.packb(belief_wire(c=0.5), use_bin_type=True)
    blob = header() + wire.replace(
        b"\xcb\x3f\xe0\x00\x00\x00\x00\x00\x00", b"\xca\x3f\x00\x00\x00"
    )
    assert code_of(blob) == ErrorCode.CORRUPT


def test_integer_in_float64_field_is_corrupt() -> None:
    with pytest.raises(DecodeError, match="float64") as info:
        oms.decode(raw_blob(belief_wire(c=1)))
    assert info.value.path == "$.confidence"


def test_non_nfc_text_is_corrupt() -> None:
    with pytest.raises(DecodeError, match="NFC") as info:
        oms.decode(raw_blob(belief_wire(s="cafe\u0301")))
    assert info.value.path == "$.subject"


def test_null_map_value_is_corrupt() -> None:
    assert code_of(raw_blob({**belief_wire(), "zz": None})) == ErrorCode.CORRUPT


def test_full_name_on_the_wire_is_corrupt() -> None:
    wire = belief_wire(c=None)
    wire = dict(sorted({**wire, "confidence": 0.5}.items()))
    assert code_of(raw_blob(wire)) == ErrorCode.CORRUPT


def test_ext_types_are_corrupt() -> None:
    wire = dict(sorted({**belief_wire(), "x": msgpack.ExtType(5, b"ab")}.items()))
    assert code_of(raw_blob(wire)) == ErrorCode.CORRUPT


def test_unsupported_payload_flags() -> None:
    for flag in (0x02, 0x04, 0x20):
        with pytest.raises(DecodeError) as info:
            oms.decode(raw_blob(belief_wire(), flags=flag))
        assert info.value.path == "header[1]"


def test_depth_limit() -> None:
    deep: Any = "leaf"
    for _ in range(40):
        deep = {"k": deep}
    with pytest.raises(DecodeError, match="deeper than 32") as info:
        oms.decode(raw_blob(belief_wire(ctx=deep)))
    assert info.value.code == ErrorCode.CORRUPT
    fields = oms.decode(raw_blob(belief_wire()))
    with pytest.raises(EncodeError, match="deeper than 32"):
        oms.encode({**fields, "context": deep})


def test_depth_limit_boundary() -> None:
    # The payload map is level 1; 31 nested maps below it reach level 32 exactly.
    ok: Any = {}
    for _ in range(30):
        ok = {"k": ok}
    fields = oms.decode(raw_blob(belief_wire()))
    assert oms.decode(oms.encode({**fields, "context": ok}))["context"] == ok
    with pytest.raises(EncodeError):
        oms.encode({**fields, "context": {"k": ok}})


def test_sensitivity_higher_than_tags_is_allowed() -> None:
    blob = raw_blob(belief_wire(tags=["pii:email"]), flags=0xC0)
    assert oms.decode(blob)["structural_tags"] == ["pii:email"]


# --- encoding --------------------------------------------------------------------


def encode_code(fields: dict[str, Any]) -> ErrorCode:
    with pytest.raises(OmsError) as info:
        oms.encode(fields)
    return info.value.code


@pytest.mark.parametrize(
    ("changes", "code", "path"),
    [
        ({"type": None}, ErrorCode.NO_TYPE, "$.type"),
        ({"type": "memo"}, ErrorCode.UNKNOWN_TYPE, "$.type"),
        ({"confidence": math.nan}, ErrorCode.FLOAT_INVALID, "$.confidence"),
        ({"confidence": -math.inf}, ErrorCode.FLOAT_INVALID, "$.confidence"),
        ({"context": {"x": math.nan}}, ErrorCode.FLOAT_INVALID, "$.context.x"),
        ({"confidence": 1.2}, ErrorCode.RANGE, "$.confidence"),
        ({"confidence": 10**400}, ErrorCode.RANGE, "$.confidence"),  # past float64
        ({"importance": -(10**5000)}, ErrorCode.RANGE, "$.importance"),  # no text
        ({"importance": -1}, ErrorCode.RANGE, "$.importance"),
        ({"success_count": -1}, ErrorCode.RANGE, "$.success_count"),
        (
            {"provenance_chain": [{}, {}, {"weight": 1.5}]},
            ErrorCode.RANGE,
            "$.provenance_chain[2].weight",
        ),
        ({"created_at": -1}, ErrorCode.RANGE, "$.created_at"),
        ({"created_at": 2**32 * 1000}, ErrorCode.RANGE, "$.created_at"),
        ({"context": {"n": 2**64}}, ErrorCode.RANGE, "$.context.n"),
        ({"context": {"n": -(2**63) - 1}}, ErrorCode.RANGE, "$.context.n"),
        ({"subject": ""}, ErrorCode.EMPTY, "$.subject"),
        ({"subject": None}, ErrorCode.SCHEMA, "$.subject"),
        ({"subject": 3}, ErrorCode.SCHEMA, "$.subject"),
        ({"confidence": True}, ErrorCode.SCHEMA, "$.confidence"),
        ({"confidence": "high"}, ErrorCode.SCHEMA, "$.confidence"),
        ({"created_at": 1.5}, ErrorCode.SCHEMA, "$.created_at"),
        ({"subject": "\ufeffuser"}, ErrorCode.CORRUPT, "$.subject"),
        ({"superseded_by": "a" * 64}, ErrorCode.SCHEMA, "$.superseded_by"),
        ({"system_valid_to": 5}, ErrorCode.SCHEMA, "$.system_valid_to"),
        (
            {"verification_status": "verified"},
            ErrorCode.SCHEMA,
            "$.verification_status",
        ),
        ({"c": 0.5}, ErrorCode.SCHEMA, "$.c"),  # a short key given as a field name
        ({"derived_from": ["abc"]}, ErrorCode.HASH_LENGTH, "$.derived_from[0]"),
        ({"derived_from": ["F" * 64]}, ErrorCode.HASH_FORMAT, "$.derived_from[0]"),
        ({"valid_from": 10, "valid_to": 5}, ErrorCode.RANGE, "$.valid_to"),
        ({"context": {"when": set()}}, ErrorCode.SCHEMA, "$.context.when"),
        (
            {"related_to": [{"hash": "a" * 64, "relation_type": "loves"}]},
            ErrorCode.SCHEMA,
            "$.related_to[0].relation_type",
        ),
    ],
)
def test_encode_error_codes(
    belief_fields: dict[str, Any], changes: dict[str, Any], code: ErrorCode, path: str
) -> None:
    fields = {**belief_fields, **changes}
    fields = {k: v for k, v in fields.items() if not (k == "type" and v is None)}
    with pytest.raises(OmsError) as info:
        oms.encode(fields)
    assert info.value.code == code
    assert info.value.path == path


def test_index_field_message_names_the_store_operation(
    belief_fields: dict[str, Any],
) -> None:
    with pytest.raises(SchemaError, match=r"store\.supersede"):
        oms.encode({**belief_fields, "superseded_by": "a" * 64})


def test_naive_datetime_refused(belief_fields: dict[str, Any]) -> None:
    from datetime import datetime

    with pytest.raises(SchemaError, match="naive"):
        oms.encode({**belief_fields, "valid_from": datetime(2026, 1, 1)})


def test_nfc_collision_refused(belief_fields: dict[str, Any]) -> None:
    """Two keys that NFC makes one are a duplicate key, as in a blob (§2.1)."""
    with pytest.raises(EncodeError, match="twice") as caught:
        oms.encode({**belief_fields, "context": {"caf\u00e9": 1, "cafe\u0301": 2}})
    assert caught.value.code == "ERR_CORRUPT"


def test_lone_surrogate_refused(belief_fields: dict[str, Any]) -> None:
    with pytest.raises(EncodeError):
        oms.encode({**belief_fields, "subject": "a\ud800"})


def test_not_a_mapping() -> None:
    with pytest.raises(EncodeError):
        oms.encode(["type", "belief"])  # type: ignore[arg-type]


# --- addresses -------------------------------------------------------------------


def test_verify_codes() -> None:
    address = oms.content_address(GOOD)
    oms.verify(GOOD, address)
    with pytest.raises(IntegrityError) as info:
        oms.verify(GOOD, address.upper())
    assert info.value.code == ErrorCode.HASH_FORMAT
    with pytest.raises(IntegrityError) as info:
        oms.verify(GOOD, address[:-1])
    assert info.value.code == ErrorCode.HASH_LENGTH
    with pytest.raises(IntegrityError) as info:
        oms.verify(GOOD, "0" * 64)
    assert info.value.code == ErrorCode.INTEGRITY
    with pytest.raises(IntegrityError) as info:
        oms.verify(GOOD, address[:-1] + "g")
    assert info.value.code == ErrorCode.HASH_FORMAT


def test_content_address_checks_version() -> None:
    with pytest.raises(DecodeError) as info:
        oms.content_address(b"\x02" + GOOD[1:])
    assert info.value.code == ErrorCode.VERSION


@given(st.binary(max_size=200))
def test_arbitrary_payload_only_raises_oms_errors(payload: bytes) -> None:
    round_trip(header() + payload)  # and what decodes re-encodes to itself


@given(st.binary(min_size=0, max_size=60))
def test_arbitrary_bytes_only_raise_oms_errors(data: bytes) -> None:
    round_trip(data)


@given(st.integers(min_value=0, max_value=len(GOOD) - 1), st.integers(1, 255))
def test_flipped_byte_never_verifies_and_never_escapes(index: int, xor: int) -> None:
    address = oms.content_address(GOOD)
    bad = bytearray(GOOD)
    bad[index] ^= xor
    with pytest.raises(OmsError):
        oms.verify(bytes(bad), address)
    round_trip(bytes(bad))


def test_a_trigger_without_enabled_is_refused_not_rewritten() -> None:
    # §6.14: `enabled` is always emitted. Accepting a blob without it would make
    # its re-encoding (which writes it) a different grain.
    import msgpack

    from tests.helpers import raw_blob

    given = oms.encode({"type": "trigger", "kind": "manual", "workflow": "a" * 64,
                        "created_at": 1768471200000})  # fmt: skip
    assert oms.decode(given)["enabled"] is True  # the encoder writes it
    wire = msgpack.unpackb(given[9:], raw=False)
    del wire["tena"]
    blob = raw_blob(wire, type_byte=given[2])
    with pytest.raises(SchemaError) as info:
        oms.decode(blob)
    assert info.value.path == "$.enabled"


@pytest.mark.parametrize("type_byte", [0x00, 0x01, 0x0D])
def test_an_unknown_type_needs_an_application_type_byte(type_byte: int) -> None:
    # Only 0x0e-0xff can carry a type this codec does not know: a blob with any other
    # byte could never be written back, so its address would change on re-encoding.
    blob = raw_blob({"ca": 1768471200000, "t": "mystery", "x": 1}, type_byte=type_byte)
    with pytest.raises(DecodeError) as caught:
        oms.decode(blob)
    assert caught.value.code is ErrorCode.CORRUPT and caught.value.path == "header[2]"
    with pytest.raises(DecodeError):
        oms.Grain.from_blob(blob)


@pytest.mark.parametrize("type_byte", [0x0E, 0xEF, 0xF0, 0xFF])
def test_an_unknown_type_with_an_application_byte_round_trips(type_byte: int) -> None:
    blob = raw_blob({"ca": 1768471200000, "t": "mystery", "x": 1}, type_byte=type_byte)
    assert oms.encode(oms.decode(blob), type_byte=type_byte) == blob


@pytest.mark.parametrize("where", ["context", "unknown", "created_at", "count"])
def test_an_integer_too_long_to_print_is_out_of_range(
    belief_fields: dict[str, Any], where: str
) -> None:
    """Python will not write an integer of more than 4,300 digits: the refusal
    must say so without writing it."""
    huge = -(10**5000) if where == "count" else 10**5000
    fields = dict(belief_fields)
    if where == "context":
        fields["context"] = {"n": huge}
    elif where == "unknown":
        fields["zz"] = huge
    elif where == "count":
        fields = {"type": "workflow", "created_at": 1, "trigger": "t", "steps": ["s"],
                  "nodes": ["a"], "edges": [], "run_count": huge}  # fmt: skip
    else:
        fields["created_at"] = huge
    with pytest.raises(oms.OmsError, match="2\\^") as caught:
        oms.encode(fields)
    assert caught.value.code == "ERR_RANGE"


@pytest.mark.parametrize("blob", [None, 5, "\x01" + "x" * 20, [1, 0, 1], {"a": 1}])
def test_every_entry_point_refuses_what_is_no_bytes(blob: Any) -> None:
    for call in (oms.content_address, oms.Grain.from_blob, oms.decode,
                 lambda b: oms.verify(b, "0" * 64)):  # fmt: skip
        with pytest.raises(oms.DecodeError, match="expected bytes") as caught:
            call(blob)
        assert caught.value.code == "ERR_CORRUPT"


def test_a_map_key_too_long_to_print_is_refused(belief_fields: dict[str, Any]) -> None:
    with pytest.raises(oms.OmsError, match="map keys are text") as caught:
        oms.encode({**belief_fields, "context": {10**5000: 1}})
    assert caught.value.code == "ERR_SCHEMA"
