"""The rules a field map cannot say: whole-map checks and per-type rules (spec §8).

Each rule takes a grain's fields by full name (or, for a table check, one nested
map and its path) and raises :class:`~oms_rdf.errors.SchemaError` with the path of
the field that breaks it. :mod:`.schema` attaches them to the grain types.

>>> trigger({"type": "trigger", "kind": "manual", "workflow": "w"})
Traceback (most recent call last):
...
oms_rdf.errors.SchemaError: ERR_SCHEMA: a trigger always carries `enabled` (spec §6.14) (at $.enabled)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ErrorCode, SchemaError

__all__ = [
    "CITATION_KEYS",
    "Rule",
    "consent",
    "content_ref_shape",
    "event_content",
    "observation",
    "recommendation",
    "tool_phase",
    "trigger",
    "workflow_graph",
]

Rule = Callable[[Mapping[str, Any]], None]
"""A per-type rule: it takes the grain's fields by full name and raises or returns."""


CITATION_KEYS = frozenset({"citation_type", "identifier"})  # §27.5 citation entries


def content_ref_shape(entry: Mapping[str, Any], path: str) -> None:
    """A ``content_refs`` entry is a reference (uri, modality) or a citation."""
    # §7.1: a reference needs uri + modality; a §27.5 citation needs its own pair.
    if not ({"uri", "modality"} <= entry.keys() or CITATION_KEYS <= entry.keys()):
        raise SchemaError(
            "a content_refs entry needs uri and modality, or citation_type and "
            f"identifier; found keys {sorted(entry)}",
            path=path,
        )


def _fail(msg: str, path: str, code: ErrorCode = ErrorCode.SCHEMA) -> SchemaError:
    return SchemaError(msg, code=code, path=path)


def _require_nonempty(g: Mapping[str, Any], name: str, why: str) -> None:
    if name not in g:
        raise _fail(f"missing required field {name!r} ({why})", f"$.{name}")
    value = g[name]
    if value == "" or value == [] or value == {}:
        raise _fail(
            f"required field {name!r} is empty ({why})", f"$.{name}", ErrorCode.EMPTY
        )


# --- per-type rules that a table cannot say (spec §8) -----------------------------


def event_content(g: Mapping[str, Any]) -> None:
    """An Event carries content, unless content_blocks or s/r/o describe it;
    each of its content blocks has a type."""
    for i, block in enumerate(g.get("content_blocks", ())):
        # §8.2: every block MUST have a type (text, image, tool_use, ...).
        kind = block.get("type")
        if not isinstance(kind, str):
            found = "none" if kind is None else type(kind).__name__
            raise _fail(
                f"a content block needs a type (text, image, tool_use, ...); found {found}",
                f"$.content_blocks[{i}].type",
            )
        if kind == "":
            raise _fail(
                "a content block's type is empty",
                f"$.content_blocks[{i}].type",
                ErrorCode.EMPTY,
            )
    # §8.2: content may be left out when content_blocks or s/r/o describe the event.
    if "content_blocks" in g or all(k in g for k in ("subject", "relation", "object")):
        return
    _require_nonempty(g, "content", "an event needs content, content_blocks or s/r/o")


def workflow_graph(g: Mapping[str, Any]) -> None:
    """A Workflow's nodes are unique, and its edges, bindings and retries name them."""
    if "nodes" not in g and "steps" in g:
        return  # a 1.0-1.3 workflow: `steps` is kept as an unknown field
    _require_nonempty(g, "nodes", "a workflow needs at least one node")
    nodes = g["nodes"]
    if len(set(nodes)) != len(nodes):
        dup = next(n for n in nodes if nodes.count(n) > 1)
        raise _fail(f"node ids must be unique; {dup!r} appears twice", "$.nodes")
    known = set(nodes)
    for i, edge in enumerate(g.get("edges", ())):
        for end in ("src", "dst"):
            if edge.get(end) not in known:
                raise _fail(
                    f"edge {end} {edge.get(end)!r} names no node of {sorted(known)}",
                    f"$.edges[{i}].{end}",
                )
    for name in ("bindings", "retries"):
        for key in g.get(name, {}):
            if key not in known:
                raise _fail(f"{name} key {key!r} names no node", f"$.{name}.{key}")


_TOOL_PHASES: Mapping[str | None, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # phase: (required, must not be present) — spec §27.1
    "definition": (
        ("tool_name", "tool_description", "input_schema"),
        (
            "input",
            "content",
            "is_error",
            "stdout",
            "stderr",
            "exit_code",
            "duration_ms",
        ),
    ),
    "call": (
        ("tool_name", "input"),
        ("content", "is_error", "stdout", "stderr", "exit_code", "duration_ms"),
    ),
    "result": (("tool_call_id", "content", "is_error"), ()),
    None: (("tool_name", "input", "content", "is_error"), ()),
}


def tool_phase(g: Mapping[str, Any]) -> None:
    """An Action carries the fields its tool_phase needs, and none it forbids."""
    if g["type"] == "tool_call":
        return  # 1.0/1.1 ToolCall used args/res/ok, kept as unknown fields
    phase = g.get("tool_phase")
    required, forbidden = _TOOL_PHASES[phase]
    for name in required:
        if name not in g:
            raise _fail(
                f"a tool grain in phase {phase or 'complete'!r} needs {name!r}",
                f"$.{name}",
            )
        if g[name] == "":  # spec §13: an empty required string is ERR_EMPTY
            raise _fail(
                f"a tool grain in phase {phase or 'complete'!r} needs a non-empty "
                f"{name!r}",
                f"$.{name}",
                ErrorCode.EMPTY,
            )
    for name in forbidden:
        if name in g:
            raise _fail(
                f"a tool grain in phase {phase!r} must not carry {name!r}", f"$.{name}"
            )


def observation(g: Mapping[str, Any]) -> None:
    """A human observer names no observer_model."""
    if g.get("observer_type") == "human" and "observer_model" in g:
        raise _fail(
            "a human observer has no observer_model (spec §8.6)", "$.observer_model"
        )


def consent(g: Mapping[str, Any]) -> None:
    """A withdrawal of consent names the consent it withdraws."""
    if g.get("is_withdrawal") is True and "prior_consent" not in g:
        raise _fail(
            "a withdrawal must reference prior_consent (spec §8.10)", "$.prior_consent"
        )


def recommendation(g: Mapping[str, Any]) -> None:
    """A Recommendation carries exactly one proposal and a text analyzer.id."""
    proposals = [
        p for p in ("proposal_cal", "proposal_edit", "proposal_data") if p in g
    ]
    if len(proposals) != 1:
        raise _fail(
            f"a recommendation carries exactly one of proposal_cal, proposal_edit, "
            f"proposal_data; found {proposals or 'none'}",
            "$",
        )
    if not isinstance(g["analyzer"].get("id"), str):
        raise _fail(
            "analyzer.id must be a string like 'publisher.name/1'", "$.analyzer.id"
        )


_TRIGGER_NEEDS = {"schedule": "cron", "once": "at_ms", "memory": "predicate"}


def trigger(g: Mapping[str, Any]) -> None:
    """A Trigger carries ``enabled`` and what its kind needs (spec §6.14)."""
    # §6.14: `enabled` is always emitted. The encoder writes it when it is not
    # given; a blob without it is refused rather than re-encoded with it, which
    # would change its address (the round trip is the law).
    if "enabled" not in g:
        raise _fail("a trigger always carries `enabled` (spec §6.14)", "$.enabled")
    kind = g["kind"]
    if kind in ("interval", "polling") and not g.get("interval_secs", 0) > 0:
        raise _fail(
            f"a {kind} trigger needs a positive interval_secs", "$.interval_secs"
        )
    if kind in _TRIGGER_NEEDS and _TRIGGER_NEEDS[kind] not in g:
        need = _TRIGGER_NEEDS[kind]
        raise _fail(f"a {kind} trigger needs {need!r}", f"$.{need}")
    if kind == "composite" and (len(g.get("members", {})) < 2 or "predicate" not in g):
        raise _fail(
            "a composite trigger needs at least 2 members and a predicate", "$.members"
        )
