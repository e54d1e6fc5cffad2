"""Hypothesis strategies for valid grains of every OMS type (full field names)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from oms_rdf.codec.schema import ALL_TYPES, RELATION_TYPES

text = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\ufeff"),
    min_size=1,
    max_size=12,
)
# Text that often is not NFC: combining accents after plain letters.
accented = (
    st.lists(
        st.sampled_from(["a", "e", "\u0301", "\u0308", "\u00e9", "Z", " "]),
        min_size=1,
        max_size=8,
    )
    .map("".join)
    .filter(lambda s: s[0] not in "\u0301\u0308")
)
label = st.one_of(text, accented)
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
count = st.integers(min_value=0, max_value=2**40)
millis = st.integers(min_value=0, max_value=4_000_000_000_000)
address = st.binary(min_size=32, max_size=32).map(bytes.hex)
key = st.one_of(
    st.text(
        st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=8
    ),
    st.sampled_from(["\u00e9t\u00e9", "\u65e5\u672c", "stra\u00dfe"]),
)
scalar = st.one_of(
    label,
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.binary(max_size=8),
)
json_like = st.recursive(
    scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(key, inner, max_size=3)
    ),
    max_leaves=8,
)
small_map = st.dictionaries(key, json_like, max_size=4)
tags = st.lists(
    st.sampled_from(
        [
            "phi:diagnosis",
            "pii:email",
            "sec:token",
            "legal:privilege",
            "reg:sox",
            "topic:work",
            "mg:protected",
        ]
    ),
    max_size=3,
)


@st.composite
def valid_interval(draw: st.DrawFn) -> dict[str, int]:
    start = draw(st.one_of(st.none(), millis))
    end = draw(st.one_of(st.none(), millis))
    if start is not None and end is not None and end < start:
        start, end = end, start
    return {
        k: v for k, v in (("valid_from", start), ("valid_to", end)) if v is not None
    }


COMMON: dict[str, st.SearchStrategy[Any]] = {
    "namespace": label,
    "source_type": st.sampled_from(["user_explicit", "agent_inferred", "imported"]),
    "importance": unit,
    "author_did": text,
    "user_id": text,
    "structural_tags": tags,
    "derived_from": st.lists(address, max_size=2),
    "context": small_map,
    "system_valid_from": millis,
    "provenance_chain": st.lists(
        st.fixed_dictionaries({"source_hash": address, "method": text, "weight": unit}),
        max_size=2,
    ),
    "related_to": st.lists(
        st.fixed_dictionaries(
            {"hash": address, "relation_type": st.sampled_from(sorted(RELATION_TYPES))},
            optional={"weight": unit},
        ),
        max_size=2,
    ),
    "content_refs": st.lists(
        st.fixed_dictionaries(
            {"uri": text, "modality": st.sampled_from(["image", "audio"])},
            optional={"mime_type": text, "size_bytes": count, "metadata": small_map},
        ),
        max_size=2,
    ),
    "embedding_refs": st.lists(
        st.fixed_dictionaries(
            {"vector_id": text, "model": text, "dimensions": count},
            optional={"chunk_index": count, "distance_metric": st.just("cosine")},
        ),
        max_size=2,
    ),
    "invalidation_policy": st.fixed_dictionaries(
        {"mode": st.sampled_from(["open", "locked", "soft_locked"])},
        optional={"authorized": st.lists(text, max_size=2)},
    ),
    "x_unknown_field": json_like,
}


@st.composite
def workflow_fields(draw: st.DrawFn) -> dict[str, Any]:
    nodes = draw(st.lists(text, min_size=1, max_size=4, unique=True))
    edges = draw(
        st.lists(
            st.fixed_dictionaries(
                {"src": st.sampled_from(nodes), "dst": st.sampled_from(nodes)},
                optional={"max_cycles": st.integers(0, 5), "cond": text},
            ),
            max_size=3,
        )
    )
    return {"nodes": nodes, "edges": edges, "retries": {nodes[0]: 2}}


@st.composite
def tool_fields(draw: st.DrawFn) -> dict[str, Any]:
    phase = draw(st.sampled_from([None, "definition", "call", "result"]))
    if phase == "definition":
        return {
            "tool_phase": phase,
            "tool_name": draw(text),
            "tool_description": draw(text),
            "input_schema": draw(small_map),
        }
    if phase == "call":
        return {"tool_phase": phase, "tool_name": draw(text), "input": draw(small_map)}
    result = {
        "content": draw(json_like),
        "is_error": draw(st.booleans()),
        "duration_ms": draw(count),
        "stdout": draw(text),
    }
    if phase == "result":
        return {"tool_phase": phase, "tool_call_id": draw(text), **result}
    return {"tool_name": draw(text), "input": draw(small_map), **result}


TYPE_FIELDS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "belief": st.fixed_dictionaries(
        {
            "subject": label,
            "relation": label,
            "object": st.one_of(label, small_map),
            "confidence": unit,
        },
        optional={
            "temporal_type": st.sampled_from(["state", "observation"]),
            "success_count": count,
            "failure_count": count,
        },
    ),
    "event": st.fixed_dictionaries(
        {"content": label},
        optional={
            "role": st.sampled_from(["user", "assistant"]),
            "model_id": text,
            "token_usage": small_map,
            "consolidated": st.booleans(),
        },
    ),
    "state": st.fixed_dictionaries(
        {"context": small_map}, optional={"plan": st.lists(text, max_size=3)}
    ),
    "workflow": workflow_fields(),
    "action": tool_fields(),
    "observation": st.fixed_dictionaries(
        {
            "observer_id": label,
            "observer_type": st.sampled_from(["camera", "llm", "acme:x"]),
        },
        optional={
            "observation_mode": st.sampled_from(["passive", "reflective"]),
            "observation_scope": st.sampled_from(["point", "session"]),
            "compression_ratio": st.floats(0, 1e6),
            "observer_model": text,
        },
    ),
    "goal": st.fixed_dictionaries(
        {
            "description": label,
            "goal_state": st.sampled_from(
                ["active", "satisfied", "failed", "suspended"]
            ),
        },
        optional={
            "priority": st.integers(1, 5),
            "progress": unit,
            "deadline": millis,
            "criteria": st.lists(text, max_size=2),
            "evidence_required": count,
        },
    ),
    "reasoning": st.fixed_dictionaries(
        {},
        optional={
            "premises": st.lists(address, max_size=2),
            "conclusion": label,
            "random_seed": st.integers(-(2**63), 2**63 - 1),
        },
    ),
    "consensus": st.fixed_dictionaries(
        {
            "participating_observers": st.lists(text, min_size=1, max_size=3),
            "threshold": count,
            "agreement_count": count,
            "dissent_count": count,
        },
        optional={"agreed_content": json_like},
    ),
    "consent": st.fixed_dictionaries(
        {
            "subject_did": text,
            "grantee_did": text,
            "scope": st.lists(st.sampled_from(["store", "share", "infer"]), min_size=1),
            "is_withdrawal": st.just(False),
        },
        optional={"jurisdiction": st.just("eu")},
    ),
    "skill": st.fixed_dictionaries(
        {"name": label, "description": label},
        optional={
            "proficiency": unit,
            "practice_count": count,
            "last_practiced_at": millis,
        },
    ),
    "recommendation": st.fixed_dictionaries(
        {
            "target_ref": text,
            "analyzer": st.fixed_dictionaries({"id": st.just("pub.lint/1")}),
            "summary": small_map,
            "dedup_key": text,
            "proposal_data": small_map,
        },
        optional={"severity": st.sampled_from(["info", "high"])},
    ),
    "trigger": st.fixed_dictionaries(
        {"kind": st.just("manual"), "workflow": address, "enabled": st.booleans()},
        optional={
            "config": st.fixed_dictionaries(
                {}, optional={"int:base_url": text, "custom": text}
            )
        },
    ),
}

TYPE_BY_NAME = {t.names[0]: t for t in ALL_TYPES}


@st.composite
def grains(draw: st.DrawFn, type_name: str | None = None) -> dict[str, Any]:
    """A valid grain of the given type (or any type), with full field names."""
    name = type_name or draw(st.sampled_from(sorted(TYPE_FIELDS)))
    gtype = TYPE_BY_NAME[name]
    fields: dict[str, Any] = {
        "type": draw(st.sampled_from(gtype.names)),
        "created_at": draw(millis),
    }
    fields.update(draw(st.fixed_dictionaries({}, optional=COMMON)))
    fields.update(draw(valid_interval()))
    fields.update(draw(TYPE_FIELDS[name]))
    return fields
