"""The field maps against the spec's tables (digest §4)."""

from __future__ import annotations

import msgpack
import pytest

import oms_rdf as oms
from oms_rdf.codec.schema import (
    ALL_TYPES,
    CORE_TABLE,
    TYPE_NAMES,
    GrainType,
    type_for_byte,
)

PUBLISHED_TYPE_STRINGS = {
    "belief": 1,
    "fact": 1,
    "event": 2,
    "episode": 2,
    "state": 3,
    "checkpoint": 3,
    "workflow": 4,
    "action": 5,
    "tool": 5,
    "tool_call": 5,
    "observation": 6,
    "goal": 7,
    "reasoning": 8,
    "consensus": 9,
    "consent": 10,
    "skill": 11,
    "recommendation": 12,
    "trigger": 13,
}


def test_every_published_type_string() -> None:
    assert {n: t.byte for n, t in TYPE_NAMES.items()} == PUBLISHED_TYPE_STRINGS
    assert [t.name for t in ALL_TYPES][:10] == [
        "belief",
        "event",
        "state",
        "workflow",
        "action",
        "observation",
        "goal",
        "reasoning",
        "consensus",
        "consent",
    ]
    assert type_for_byte(0x0E) is None


@pytest.mark.parametrize("gtype", ALL_TYPES, ids=lambda t: t.name)
def test_field_map_is_a_bijection(gtype: GrainType) -> None:
    shorts = [f.short for f in gtype.table.fields]
    fulls = [f.full for f in gtype.table.fields]
    assert len(set(shorts)) == len(shorts)
    assert len(set(fulls)) == len(fulls)


@pytest.mark.parametrize(
    ("type_name", "full", "short"),
    [
        ("event", "content", "content"),
        ("action", "content", "cnt"),
        ("consent", "scope", "scope"),
        ("trigger", "scope", "tscp"),
        ("recommendation", "dedup_key", "ddk"),
        ("trigger", "dedup_key", "tdk"),
        ("observation", "observer_id", "oid"),
        ("observation", "observer_type", "otype"),
        ("action", "stdout", "out"),
        ("action", "stderr", "err2"),
        ("consensus", "threshold", "thold"),
        ("skill", "name", "skname"),
        ("skill", "resources", "res"),
        ("goal", "depends_on", "depg"),
        ("belief", "session_id", "sid2"),
        ("belief", "user_id", "user"),
    ],
)
def test_type_aware_short_keys(type_name: str, full: str, short: str) -> None:
    assert TYPE_NAMES[type_name].table.by_full[full].short == short


def test_nested_compaction() -> None:
    by_full = CORE_TABLE.by_full
    assert by_full["related_to"].nested is not None
    assert by_full["related_to"].nested.by_full["relation_type"].short == "rl"
    assert by_full["content_refs"].nested.by_full["mime_type"].short == "mt"  # type: ignore[union-attr]
    assert by_full["embedding_refs"].nested.by_full["chunk_text"].short == "ct"  # type: ignore[union-attr]
    assert by_full["provenance_chain"].nested.by_full["weight"].short == "weight"  # type: ignore[union-attr]
    workflow = TYPE_NAMES["workflow"].table.by_full["edges"].nested
    assert workflow is not None and workflow.by_full["max_cycles"].short == "mxc"


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"type": "event"}, "$.content"),
        ({"type": "state"}, "$.context"),
        ({"type": "workflow", "nodes": ["a", "a"]}, "$.nodes"),
        (
            {"type": "workflow", "nodes": ["a"], "edges": [{"src": "a", "dst": "b"}]},
            "$.edges[0].dst",
        ),
        ({"type": "workflow", "nodes": ["a"], "retries": {"b": 1}}, "$.retries.b"),
        ({"type": "action", "tool_phase": "call", "tool_name": "t"}, "$.input"),
        (
            {
                "type": "action",
                "tool_phase": "call",
                "tool_name": "t",
                "input": {},
                "content": "x",
            },
            "$.content",
        ),
        (
            {"type": "action", "tool_phase": "definition", "tool_name": "t"},
            "$.tool_description",
        ),
        ({"type": "action", "tool_phase": "bogus"}, "$.tool_phase"),
        ({"type": "observation", "observer_id": "o"}, "$.observer_type"),
        (
            {
                "type": "observation",
                "observer_id": "o",
                "observer_type": "human",
                "observer_model": "m",
            },
            "$.observer_model",
        ),
        (
            {
                "type": "observation",
                "observer_id": "o",
                "observer_type": "x",
                "observation_mode": "loud",
            },
            "$.observation_mode",
        ),
        ({"type": "goal", "description": "d", "goal_state": "done"}, "$.goal_state"),
        (
            {
                "type": "consensus",
                "participating_observers": ["a"],
                "threshold": 1,
                "agreement_count": 1,
            },
            "$.dissent_count",
        ),
        (
            {
                "type": "consent",
                "subject_did": "a",
                "grantee_did": "b",
                "scope": ["store"],
                "is_withdrawal": True,
            },
            "$.prior_consent",
        ),
        ({"type": "skill", "name": "n"}, "$.description"),
        (
            {
                "type": "recommendation",
                "target_ref": "t",
                "analyzer": {"id": "a/1"},
                "summary": {},
                "dedup_key": "k",
            },
            "$",
        ),
        ({"type": "trigger", "kind": "interval", "workflow": "w"}, "$.interval_secs"),
        ({"type": "trigger", "kind": "schedule", "workflow": "w"}, "$.cron"),
        (
            {
                "type": "trigger",
                "kind": "composite",
                "workflow": "w",
                "members": {"a": "x"},
                "predicate": {},
            },
            "$.members",
        ),
        ({"type": "trigger", "kind": "sometimes", "workflow": "w"}, "$.kind"),
        (
            {
                "type": "belief",
                "subject": "s",
                "relation": "r",
                "object": "o",
                "confidence": 1,
                "content_refs": [{"uri": "u"}],
            },
            "$.content_refs[0]",
        ),
    ],
)
def test_type_rules(fields: dict[str, object], path: str) -> None:
    with pytest.raises(oms.SchemaError) as info:
        oms.encode({**fields, "created_at": 0})
    assert info.value.path == path


def test_legacy_grains_decode() -> None:
    # A 1.0-1.3 workflow with `steps` and a 1.1 tool_call with args/res/ok keep
    # their legacy keys as unknown fields.
    wf = oms.encode(
        {"type": "workflow", "steps": ["a", "b"], "trigger": "t", "created_at": 0}
    )
    assert oms.decode(wf)["steps"] == ["a", "b"]
    tc = oms.encode(
        {"type": "tool_call", "tool_name": "x", "args": {}, "ok": True, "created_at": 0}
    )
    assert oms.decode(tc)["ok"] is True


@pytest.mark.parametrize("value", [1, 1.5, True, [1, 2], ["a"]])
def test_a_beliefs_object_is_text_or_a_map_as_the_spec_says(value: object) -> None:
    fields = {"type": "belief", "subject": "a", "relation": "r", "object": value,
              "confidence": 0.5, "created_at": 1}  # fmt: skip
    with pytest.raises(oms.SchemaError) as caught:
        oms.encode(fields)
    assert caught.value.code == "ERR_SCHEMA" and caught.value.path == "$.object"
    assert oms.decode(oms.encode({**fields, "object": {"v": value}}))["object"] == {
        "v": value
    }


TOOL_RESULT = {"content": "x", "is_error": False}


@pytest.mark.parametrize(
    ("fields", "path", "code"),
    [
        ({"tool_name": "", "input": {}, **TOOL_RESULT}, "$.tool_name", "ERR_EMPTY"),
        (
            {"tool_phase": "definition", "tool_name": "t", "tool_description": ""}
            | {"input_schema": {}},
            "$.tool_description",
            "ERR_EMPTY",
        ),
        (
            {"tool_phase": "call", "tool_name": "", "input": {}},
            "$.tool_name",
            "ERR_EMPTY",
        ),
        (
            {"tool_phase": "result", "tool_call_id": "", **TOOL_RESULT},
            "$.tool_call_id",
            "ERR_EMPTY",
        ),
        (
            {"tool_phase": "result", "tool_call_id": "c", "content": ""}
            | {"is_error": False},
            "$.content",
            "ERR_EMPTY",
        ),
    ],
)
def test_a_tool_grain_refuses_an_empty_required_string(
    fields: dict[str, object], path: str, code: str
) -> None:
    # Spec §13: an empty required string is ERR_EMPTY, in every tool phase, and a
    # blob that carries one does not decode either.
    for type_name in ("tool", "action"):
        grain = {"type": type_name, "created_at": 0, **fields}
        with pytest.raises(oms.SchemaError) as info:
            oms.encode(grain)
        assert (info.value.code, info.value.path) == (code, path)
        good = oms.encode({**grain, path[2:]: "x"})
        short = TYPE_NAMES[type_name].table.by_full[path[2:]].short
        wire = msgpack.unpackb(good[9:])
        bad = good[:9] + msgpack.packb({**wire, short: ""})
        with pytest.raises(oms.SchemaError) as info:
            oms.decode(bad)
        assert (info.value.code, info.value.path) == (code, path)


@pytest.mark.parametrize(
    ("block", "code"),
    [
        ({"text": "x"}, "ERR_SCHEMA"),
        ({"type": ""}, "ERR_EMPTY"),
        ({"type": 1}, "ERR_SCHEMA"),
    ],
)
def test_every_content_block_has_a_type(block: dict[str, object], code: str) -> None:
    # Spec §8.2: every block of an event's content_blocks MUST have a type.
    event = {"type": "event", "created_at": 0, "content": "c"}
    with pytest.raises(oms.SchemaError) as info:
        oms.encode({**event, "content_blocks": [{"type": "text", "text": "y"}, block]})
    assert (info.value.code, info.value.path) == (code, "$.content_blocks[1].type")
    oms.encode({**event, "content_blocks": [{"type": "text", "text": "y"}]})
