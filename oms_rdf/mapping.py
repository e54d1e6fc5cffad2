"""Grains as RDF quads, and back: a pure, deterministic, lossless mapping.

Each grain is one statement node ``<nih:sha-256;HEX>`` (RFC 6920). Every payload
field is carried by exactly one "field triple" whose literal keeps the value
exactly (text, integer, xsd:double with a round-tripping lexical form, boolean,
UTC xsd:dateTime with milliseconds, base64 bytes, or rdf:JSON for maps and
arrays). Beside the field triples the mapping adds derived triples for queries —
classic reification (``rdf:subject``/``rdf:predicate``/``rdf:object``) of
belief-family grains, ``prov:wasDerivedFrom``, ``prov:wasAttributedTo``, typed
``related_to`` links, the effective ``oms:validFrom``/``oms:systemFrom`` — which
:func:`quads_to_grain` ignores. So the grain comes back byte for byte from the
default graph alone; the blob is also kept in graph ``oms:blobs`` for
re-verification.

>>> from oms_rdf.grain import Belief
>>> g = Belief("alice", "works_at", "Acme", 0.9, created_at=1737000000000)
>>> quads = grain_to_quads(g)
>>> quads_to_grain(quads) == g
True
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote, unquote

import msgpack
from pyoxigraph import DefaultGraph, Literal, NamedNode, Quad

from .codec import DEFAULT_NAMESPACE, EPOCH, MS, encode_fields, header_for
from .errors import DecodeError, ErrorCode
from .grain import Grain
from .schema import type_for_byte
from .vocab import (
    CLASS_BY_BYTE,
    DEFAULT_BASE,
    FIELD_NS,
    OMS,
    PROV,
    RDF,
    RELATED_PROPERTIES,
    XSD,
)

__all__ = [
    "MappingSettings",
    "entity_iri",
    "grain_iri",
    "grain_to_quads",
    "millis_literal",
    "quads_to_grain",
    "relation_iri",
]

NIH_PREFIX = "nih:sha-256;"
DEFAULT = DefaultGraph()
BELIEF_BYTE = 0x01

# Fields carried by a named ontology property; every other field is carried by a
# property in the field namespace, <FIELD_NS><percent-encoded full name>.
NAMED_FIELDS: Mapping[str, NamedNode] = {
    "type": OMS.typeString,
    "subject": OMS.subjectText,
    "relation": OMS.relationText,
    "confidence": OMS.confidence,
    "importance": OMS.importance,
    "source_type": OMS.sourceType,
    "created_at": OMS.createdAt,
    "valid_to": OMS.validTo,
    "author_did": OMS.authorDid,
    "derived_from": OMS.derivedFrom,
    "invalidation_policy": OMS.invalidationPolicy,
    "provenance_chain": OMS.provenanceChain,
    "context": OMS.context,
    "structural_tags": OMS.structuralTags,
    "related_to": OMS.relatedTo,
    "user_id": OMS.userId,
    "temporal_type": OMS.temporalType,
    "supersession_justification": OMS.supersessionJustification,
    "epistemic_status": OMS.epistemicStatus,
}
# Fields whose named property carries an effective value that may be implied.
IMPLIED = {
    "valid_from": (OMS.validFrom, OMS.validFromImplied),
    "system_valid_from": (OMS.systemFrom, OMS.systemFromImplied),
    "namespace": (OMS.namespace, OMS.namespaceImplied),
}
FIELD_BY_PROPERTY: Mapping[str, str] = {
    **{p.value: name for name, p in NAMED_FIELDS.items()},
    **{p.value: name for name, (p, _) in IMPLIED.items()},
}
TRUE = Literal("true", datatype=XSD.boolean)
_DERIVED_ONLY = frozenset(
    p.value
    for p in (
        RDF.type, RDF.subject, RDF.predicate, RDF.object, OMS.contentAddress,
        OMS.objectText, OMS.objectValue, OMS.header, OMS.tag, PROV.wasDerivedFrom,
        PROV.wasAttributedTo, OMS.validFromImplied, OMS.systemFromImplied,
        OMS.namespaceImplied,
    )
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class MappingSettings:
    """What the mapping depends on besides the blob.

    Attributes:
        base_iri: prefix of entity and relation IRIs.
        entity_relations: relations whose text objects are entities (IRIs), not
            literals; the text is kept in ``oms:objectText``.
    """

    base_iri: str = DEFAULT_BASE
    entity_relations: frozenset[str] = field(default_factory=frozenset)


DEFAULT_SETTINGS = MappingSettings()


def pct(text: str) -> str:
    """Percent-encode every UTF-8 byte outside RFC 3986 unreserved, uppercase hex."""
    return quote(text, safe="")


def grain_iri(address: str) -> NamedNode:
    """Return the statement node of a grain: ``<nih:sha-256;HEX>`` (RFC 6920)."""
    return NamedNode(NIH_PREFIX + address)


def address_of(node: NamedNode) -> str:
    """Return the hex address of a statement node."""
    return node.value.removeprefix(NIH_PREFIX)


def entity_iri(
    label: str, namespace: str, settings: MappingSettings = DEFAULT_SETTINGS
) -> NamedNode:
    """Return the IRI of an entity: ``<base>entity/<namespace>/<label>``, percent-encoded.

    >>> entity_iri("Alice Smith", "shared").value
    'https://w3id.org/oms-rdf/id/entity/shared/Alice%20Smith'
    """
    return NamedNode(f"{settings.base_iri}entity/{pct(namespace)}/{pct(label)}")


def relation_iri(label: str, settings: MappingSettings = DEFAULT_SETTINGS) -> NamedNode:
    """Return the IRI of a relation: ``<base>rel/<label>``, percent-encoded.

    >>> relation_iri("works at").value
    'https://w3id.org/oms-rdf/id/rel/works%20at'
    """
    return NamedNode(f"{settings.base_iri}rel/{pct(label)}")


def millis_literal(ms: int) -> Literal:
    """Return epoch milliseconds as UTC ``xsd:dateTime`` with millisecond precision.

    Values outside years 1-9999 stay ``xsd:integer`` so that nothing is lost.

    >>> millis_literal(1768471200000).value
    '2026-01-15T10:00:00.000Z'
    """
    try:
        dt = EPOCH + ms * MS
    except OverflowError:
        return Literal(str(ms), datatype=XSD.integer)
    return Literal(
        dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z",
        datatype=XSD.dateTime,
    )


def _millis(lexical: str) -> int:
    dt = datetime.fromisoformat(lexical)
    return (dt - EPOCH) // MS


def _json(value: Any) -> str:
    # Sorted keys and Python's float repr: 1.0 stays "1.0", so int and float64
    # survive the trip (JCS would write "1" and lose the float64 kind).
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _has_bytes(value: Any) -> bool:
    if isinstance(value, bytes):
        return True
    if isinstance(value, dict):
        return any(_has_bytes(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_bytes(v) for v in value)
    return False


def value_literal(value: Any) -> Literal:
    """Return the literal that carries one field value exactly."""
    t = type(value)
    if t is str:
        return Literal(value)
    if t is bool:
        return Literal("true" if value else "false", datatype=XSD.boolean)
    if t is int:
        return Literal(str(value), datatype=XSD.integer)
    if t is float:
        return Literal(repr(value), datatype=XSD.double)
    if t is bytes:
        return Literal(base64.b64encode(value).decode(), datatype=XSD.base64Binary)
    if _has_bytes(value):
        # JSON has no bytes: such a map travels as its canonical MessagePack.
        packed = msgpack.packb(value, use_bin_type=True)
        return Literal(base64.b64encode(packed).decode(), datatype=OMS.msgpack)
    return Literal(_json(value), datatype=RDF.JSON)


def literal_value(lit: Literal) -> Any:
    """Return the field value a literal of :func:`value_literal` carries."""
    dt = lit.datatype.value
    text = lit.value
    if dt == XSD.string.value:
        return text
    if dt == XSD.integer.value:
        return int(text)
    if dt == XSD.double.value:
        return float(text)
    if dt == XSD.boolean.value:
        return text == "true"
    if dt == XSD.dateTime.value:
        return _millis(text)
    if dt == XSD.base64Binary.value:
        return base64.b64decode(text)
    if dt == RDF.JSON.value:
        return json.loads(text)
    if dt == OMS.msgpack.value:
        return msgpack.unpackb(base64.b64decode(text), raw=False)
    raise DecodeError(
        f"literal of datatype <{dt}> carries no grain field", code=ErrorCode.CORRUPT
    )


def _time_or_value(name: str, value: Any) -> Literal:
    if name in _TIME_FIELDS and type(value) is int:
        return millis_literal(value)
    return value_literal(value)


def grain_to_quads(
    grain: Grain, settings: MappingSettings = DEFAULT_SETTINGS
) -> list[Quad]:
    """Return the quads of a grain: its projection in the default graph, its blob in ``oms:blobs``.

    The index layer (status, supersession, ...) is the store's, not part of the grain.
    """
    node = grain_iri(grain.address)
    fields = grain.fields
    gtype = type_for_byte(grain.type_byte)
    out: list[Quad] = [
        Quad(node, RDF.type, CLASS_BY_BYTE.get(grain.type_byte, OMS.Grain), DEFAULT),
        Quad(node, OMS.contentAddress, Literal(grain.address), DEFAULT),
    ]
    add = out.append
    for name, value in fields.items():
        prop = NAMED_FIELDS.get(name)
        if prop is not None:
            add(Quad(node, prop, _time_or_value(name, value), DEFAULT))
        elif name == "object":
            prop = OMS.objectText if type(value) is str else OMS.objectValue
            add(Quad(node, prop, value_literal(value), DEFAULT))
        elif name not in IMPLIED:
            field_prop = NamedNode(FIELD_NS + pct(name))
            add(Quad(node, field_prop, _time_or_value(name, value), DEFAULT))
    # Effective values, marked when implied by a default (so they can be told apart).
    created = fields["created_at"]
    system_from = fields.get("system_valid_from", created)
    effective = {
        "system_valid_from": system_from,
        "valid_from": fields.get("valid_from", system_from),
        "namespace": fields.get("namespace", DEFAULT_NAMESPACE),
    }
    for name, (prop, implied) in IMPLIED.items():
        value = effective[name]
        lit = Literal(value) if name == "namespace" else _time_or_value(name, value)
        add(Quad(node, prop, lit, DEFAULT))
        if name not in fields:
            add(Quad(node, implied, TRUE, DEFAULT))
    expected_header = _expected_header(grain)
    if expected_header != grain.blob[:9]:
        add(Quad(node, OMS.header, Literal(grain.blob[:9].hex()), DEFAULT))
    if gtype is not None and gtype.byte == BELIEF_BYTE:
        _reify(node, fields, effective["namespace"], settings, add)
    _links(node, fields, add)
    add(
        Quad(
            node,
            OMS.blob,
            Literal(base64.b64encode(grain.blob).decode(), datatype=XSD.base64Binary),
            OMS.blobs,
        )
    )
    return out


def _expected_header(grain: Grain) -> bytes | None:
    if type_for_byte(grain.type_byte) is None:
        return None  # an application type: its byte is known only from the header
    return header_for(grain.fields, grain.type_byte)


def _reify(
    node: NamedNode,
    fields: Mapping[str, Any],
    namespace: str,
    settings: MappingSettings,
    add: Any,
) -> None:
    subject, relation, obj = fields["subject"], fields["relation"], fields["object"]
    add(Quad(node, RDF.subject, entity_iri(subject, namespace, settings), DEFAULT))
    add(Quad(node, RDF.predicate, relation_iri(relation, settings), DEFAULT))
    if type(obj) is str and relation in settings.entity_relations:
        add(Quad(node, RDF.object, entity_iri(obj, namespace, settings), DEFAULT))
    else:
        add(Quad(node, RDF.object, value_literal(obj), DEFAULT))


def _links(node: NamedNode, fields: Mapping[str, Any], add: Any) -> None:
    for parent in fields.get("derived_from", ()):
        add(Quad(node, PROV.wasDerivedFrom, grain_iri(parent), DEFAULT))
    did = fields.get("author_did")
    if isinstance(did, str) and _is_iri(did):
        add(Quad(node, PROV.wasAttributedTo, NamedNode(did), DEFAULT))
    for tag in fields.get("structural_tags", ()):
        add(Quad(node, OMS.tag, Literal(tag), DEFAULT))
    for link in fields.get("related_to", ()):
        prop = getattr(OMS, RELATED_PROPERTIES[link["relation_type"]])
        add(Quad(node, prop, grain_iri(link["hash"]), DEFAULT))


def _is_iri(text: str) -> bool:
    try:
        NamedNode(text)
    except ValueError:
        return False
    return ":" in text


def truthy_triple(
    grain: Grain, settings: MappingSettings = DEFAULT_SETTINGS
) -> tuple[NamedNode, NamedNode, Any] | None:
    """Return the plain ``s p o`` triple a belief asserts, or None for other grains."""
    if grain.type_byte != BELIEF_BYTE:
        return None
    fields = grain.fields
    namespace = fields.get("namespace", DEFAULT_NAMESPACE)
    obj = fields["object"]
    if type(obj) is str and fields["relation"] in settings.entity_relations:
        o: Any = entity_iri(obj, namespace, settings)
    else:
        o = value_literal(obj)
    return (
        entity_iri(fields["subject"], namespace, settings),
        relation_iri(fields["relation"], settings),
        o,
    )


def quads_to_grain(quads: Iterable[Quad]) -> Grain:
    """Rebuild the grain from the quads of its default-graph projection.

    Only field triples are read: derived triples and other graphs are ignored, so
    the quads of a Turtle export (without blobs) suffice. The result is verified
    against the address of the statement node.

    Raises:
        DecodeError: ERR_CORRUPT when the quads do not describe exactly one grain.
        IntegrityError: ERR_INTEGRITY when the rebuilt blob does not hash to the node.
    """
    fields: dict[str, Any] = {}
    implied: set[str] = set()
    node: NamedNode | None = None
    header: str | None = None
    for quad in quads:
        if not isinstance(quad.graph_name, DefaultGraph):
            continue
        subject = quad.subject
        if not isinstance(subject, NamedNode) or not subject.value.startswith(
            NIH_PREFIX
        ):
            continue
        if node is None:
            node = subject
        elif subject != node:
            raise DecodeError(
                f"quads describe more than one grain: {node} and {subject}"
            )
        p = quad.predicate.value
        obj = quad.object
        if p == OMS.header.value and isinstance(obj, Literal):
            header = obj.value
            continue
        if p in (
            OMS.validFromImplied.value,
            OMS.systemFromImplied.value,
            OMS.namespaceImplied.value,
        ):
            implied.add(p)
            continue
        if p in _DERIVED_ONLY and p not in (
            OMS.objectText.value,
            OMS.objectValue.value,
        ):
            continue
        if not isinstance(obj, Literal):
            continue
        if p in (OMS.objectText.value, OMS.objectValue.value):
            name = "object"
        elif p in FIELD_BY_PROPERTY:
            name = FIELD_BY_PROPERTY[p]
        elif p.startswith(FIELD_NS):
            name = unquote(p[len(FIELD_NS) :])
        else:
            continue
        if name in fields:
            raise DecodeError(
                f"field {name!r} appears twice for {node}", path=f"$.{name}"
            )
        fields[name] = literal_value(obj)
    if node is None:
        raise DecodeError("no grain statement node <nih:sha-256;...> in the quads")
    for name, (_, flag) in IMPLIED.items():
        if flag.value in implied:
            fields.pop(name, None)
    address = address_of(node)
    if header is None:
        blob, _ = encode_fields(fields)
    else:
        head = bytes.fromhex(header)
        blob, _ = encode_fields(
            fields, type_byte=head[2] if type_for_byte(head[2]) is None else None
        )
        blob = head + blob[9:]
    return Grain.from_blob(blob, address=address)


_TIME_FIELDS = frozenset(
    {
        "created_at", "valid_from", "valid_to", "system_valid_from", "system_valid_to",
        "last_accessed_at", "timestamp_ms", "deadline", "delegation_expiry",
        "last_practiced_at", "at_ms",
    }
)  # fmt: skip
