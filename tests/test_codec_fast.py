"""The fast path for flat grains gives exactly what the full walk gives, or steps aside."""

from __future__ import annotations

import struct
from types import MappingProxyType
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

import oms_rdf as oms
from oms_rdf.codec.decoding import _decode_flat, _decode_full, _parse
from oms_rdf.codec.encoding import _fast_path
from oms_rdf.codec.fast import plan_for, run_plan
from oms_rdf.codec.schema import BELIEF, TYPE_NAMES

BASE = {
    "type": "belief",
    "subject": "alice",
    "relation": "works_at",
    "object": "Acme",
    "confidence": 0.75,
    "source_type": "user_explicit",
    "created_at": 1_768_471_200_000,
    "valid_from": 1_768_000_000_000,
    "namespace": "work",
}


class Text(str):
    """A str subclass: the walk refuses it, so the fast path must not take it."""


# Values that are valid, convertible or wrong for some field kind.
NASTY = st.one_of(
    st.sampled_from(
        [
            "",
            "plain",
            "caf\u00e9",
            "cafe\u0301",  # NFD: the walk normalises it
            "\ufeffbom",
            Text("sub"),
            True,
            False,
            0,
            1,
            -1,
            255,
            256,
            2**32 * 1000,
            2**63,
            2**64,
            -(2**63) - 1,
            0.0,
            -0.0,
            0.5,
            1.0,
            1.5,
            -0.25,
            float("nan"),
            float("inf"),
            float("-inf"),
            None,
            [],
            ["a"],
            {},
            {"k": "v"},
            # Free maps (context, metadata): sorted or not, ASCII or not, flat or not.
            {"b": "x", "a": "y"},
            {"a": "y", "b": "x"},
            {"rdf:language": "en"},
            {"caf\u00e9": "x"},
            {"k": "cafe\u0301"},
            {"k": "\ufeffbom"},
            {"k": 1},
            {"k": None},
            {"k": ["v"]},
            {"k": {"n": "v"}},
            {"": ""},
            {1: "x"},
            b"\x00",
            "fact",
            "event",
        ]
    ),
    st.text(max_size=8),
    st.integers(),
    st.floats(),
)


def flat(blob: bytes) -> dict[str, Any] | None:
    """The decoding fast path alone, as decode() runs it: None where it steps aside."""
    if len(blob) < 10 or blob[0] != 1 or blob[1] & 0x26:
        return None
    try:
        wire = _parse(blob[9:])
    except oms.DecodeError:
        return None
    return _decode_flat(blob, wire)


def outcome(fn: Any, *args: Any) -> Any:
    try:
        return ("ok", fn(*args))
    except oms.OmsError as exc:
        return ("error", type(exc), exc.code, exc.path)


ADDRESS = "ab" * 32
ADDRESSES = st.sampled_from(
    [
        [],
        [ADDRESS],
        [ADDRESS, "cd" * 32],
        ("ab" * 32,),  # a tuple: the walk converts it
        [ADDRESS.upper()],
        ["ab" * 31],
        ["ab" * 31 + "a "],
        ["zz" * 32],
        [ADDRESS, None],
        [7],
        ADDRESS,
    ]
)


@given(
    changes=st.dictionaries(
        st.sampled_from(
            [
                *BASE,
                "importance",
                "valid_to",
                "user_id",
                "superseded_by",
                "context",
                "metadata",
                "invalidation_policy",
            ]
        ),
        NASTY,
        max_size=4,
    ),
    derived=st.none() | ADDRESSES,
)
def test_encode_fast_path_equals_walk(changes: dict[str, Any], derived: Any) -> None:
    grain = {**BASE, **changes}
    if derived is not None:
        grain["derived_from"] = derived
    # A MappingProxyType is not a dict, so it always takes the full walk.
    assert outcome(oms.encode, grain) == outcome(oms.encode, MappingProxyType(grain))


def blob_with(wire: dict[str, Any], *, type_byte: int = 0x01, flags: int = 0) -> bytes:
    header = bytes((1, flags, type_byte)) + b"\x00\x01" + (1_768_471_200).to_bytes(4)
    return header + msgpack.packb(wire, use_bin_type=True)


def wire_of(fields: dict[str, Any]) -> dict[str, Any]:
    short = BELIEF.table.by_full
    return dict(
        sorted((short[k].short if k in short else k, v) for k, v in fields.items())
    )


@given(
    changes=st.dictionaries(
        st.sampled_from([*"t s r o c ca vf vt im st sb zz".split(), "ctx", "md", "ip"]),
        NASTY.filter(lambda v: not isinstance(v, Text)),
        max_size=4,
    ),
    order=st.sampled_from(["sorted", "reversed"]),
    type_byte=st.sampled_from([0x01, 0x02, 0x20]),
)
def test_decode_fast_path_equals_full(
    changes: dict[str, Any], order: str, type_byte: int
) -> None:
    wire = {**wire_of(BASE), **changes}
    wire = dict(sorted(wire.items(), reverse=order == "reversed"))
    try:
        blob = blob_with(wire, type_byte=type_byte)
    except (ValueError, OverflowError, TypeError):
        return  # msgpack cannot carry it at all
    fast = outcome(flat, blob)
    full = outcome(_decode_full, blob)
    if fast != ("ok", None):  # it took the grain: the cross-field rules may refuse
        assert fast == full
    assert outcome(oms.decode, blob) == full


def test_common_beliefs_take_the_fast_path() -> None:
    # Without this the equivalence tests above could pass with a path never taken.
    blob = oms.encode(BASE)
    assert plan_for(BELIEF, tuple(BASE), encoding=True) is not None
    assert flat(blob) == BASE
    assert oms.decode(blob) == _decode_full(blob)


def test_an_adopted_literal_takes_the_fast_path_both_ways() -> None:
    # An adopted literal carries its datatype or language in a context of texts.
    grain = {**BASE, "context": {"rdf:language": "en", "rdf:graph": "http://g"}}
    wire, fields = _fast_path(BELIEF, grain) or ({}, {})
    assert list(wire["ctx"]) == ["rdf:graph", "rdf:language"]  # sorted on the wire
    blob = oms.encode(grain)
    assert blob == oms.encode(MappingProxyType(grain))  # the walk's bytes
    assert fields["context"] == grain["context"]
    assert flat(blob) == _decode_full(blob) == oms.decode(blob)
    # The top-level keys in order, the context's not: only the inner order fails.
    unsorted = blob_with(wire_of({**BASE, "context": {"b": "x", "a": "y"}}))
    assert flat(unsorted) is None  # the walk reports the order
    with pytest.raises(oms.DecodeError, match="canonical order"):
        oms.decode(unsorted)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("subject", "cafe\u0301"),  # not NFC: the walk normalises
        ("subject", Text("alice")),
        ("subject", ""),  # required and empty: ERR_EMPTY from the walk
        ("confidence", 1),  # int for float64: the walk converts
        ("confidence", float("nan")),
        ("confidence", 1.5),
        ("created_at", True),
        ("created_at", 2**32 * 1000),  # beyond the header's u32 seconds
        ("valid_from", -1),
    ],
)
def test_fast_path_steps_aside(name: str, value: Any) -> None:
    plan = plan_for(BELIEF, tuple(BASE), encoding=True)
    assert plan is not None
    assert run_plan(plan, {**BASE, name: value}) is None


def test_fast_path_refuses_key_sets_it_cannot_check() -> None:
    assert plan_for(BELIEF, (*BASE, "superseded_by"), encoding=True) is None  # index
    nested = (*BASE, "provenance_chain")  # maps with a field map of their own
    assert plan_for(BELIEF, nested, encoding=True) is None
    assert plan_for(BELIEF, (*BASE, "context"), encoding=True) is not None  # texts
    assert plan_for(BELIEF, (*BASE, "mystery"), encoding=True) is None  # unknown
    without = tuple(k for k in BASE if k != "confidence")
    assert plan_for(BELIEF, without, encoding=True) is None  # required missing
    shorts = tuple(sorted(wire_of(BASE)))
    assert plan_for(BELIEF, shorts, encoding=False) is not None
    assert plan_for(BELIEF, shorts[::-1], encoding=False) is None  # unsorted


def test_non_canonical_numbers_take_the_full_path() -> None:
    # float32 confidence and a uint64 where a uint32 fits: both refused, ERR_CORRUPT.
    wire = wire_of(BASE)
    packed = msgpack.packb(wire, use_bin_type=True)
    as32 = packed.replace(
        b"\xa1c\xcb" + struct.pack(">d", 0.75), b"\xa1c\xca" + struct.pack(">f", 0.75)
    )
    assert as32 != packed
    small = {**wire, "vf": 5}
    wide = msgpack.packb(small, use_bin_type=True).replace(
        b"\xa2vf\x05", b"\xa2vf\xcf" + (5).to_bytes(8)
    )
    header = blob_with({})[:9]
    for payload in (as32, wide):
        blob = header + payload
        assert flat(blob) is None
        with pytest.raises(oms.DecodeError, match="not canonical MessagePack") as info:
            oms.decode(blob)
        assert info.value.code == "ERR_CORRUPT"


def test_type_byte_must_match_type_string() -> None:
    blob = blob_with(wire_of(BASE), type_byte=TYPE_NAMES["event"].byte)
    assert flat(blob) is None
    with pytest.raises(oms.DecodeError, match="does not match type"):
        oms.decode(blob)


def test_fast_path_grain_owns_its_lists() -> None:
    derived = ["ab" * 32]
    grain = oms.Grain.from_dict({**BASE, "derived_from": derived})
    assert plan_for(BELIEF, (*BASE, "derived_from"), encoding=True) is not None
    derived.append("cd" * 32)  # the caller's list changes; the grain's must not
    assert grain["derived_from"] == ["ab" * 32]
    assert oms.decode(grain.blob)["derived_from"] == ["ab" * 32]
    assert flat(grain.blob) == oms.decode(grain.blob)


def test_null_fields_are_dropped_on_the_fast_path_too() -> None:
    # Adopted triples carry `namespace: None` and `context: None`; omitting nulls
    # (spec §4.5) must neither change the bytes nor send them down the full walk.
    nulls = {"valid_to": None, "context": None, "superseded_by": None}
    grain = {**BASE, **nulls}
    assert _fast_path(BELIEF, grain) is not None
    assert oms.encode(grain) == oms.encode(BASE) == oms.encode(MappingProxyType(grain))
    # A key that is not text is still refused, null or not.
    with pytest.raises(oms.SchemaError, match="map keys are text") as info:
        oms.encode({**grain, 7: None})
    assert info.value.code == "ERR_SCHEMA"


def test_whole_numbers_and_addresses_are_checked_on_the_fast_path() -> None:
    """A field of any whole number (a goal's priority) takes the path within
    int64..uint64; an address list takes it only when each is 64 lowercase hex."""
    from oms_rdf.codec.schema import GOAL

    goal = {"type": "goal", "description": "ship", "goal_state": "active",
            "created_at": 1_768_471_200_000, "priority": 2}  # fmt: skip
    plan = plan_for(GOAL, tuple(goal), encoding=True)
    assert plan is not None and run_plan(plan, goal) is not None
    assert run_plan(plan, {**goal, "priority": 2**64}) is None
    fields = {**BASE, "derived_from": ["ab" * 32]}
    plan = plan_for(BELIEF, tuple(fields), encoding=True)
    assert plan is not None and run_plan(plan, fields) is not None
    for bad in ("zz" * 32, "AB" * 32, "ab" * 31):
        assert run_plan(plan, {**fields, "derived_from": [bad]}) is None
