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

>>> from oms_rdf.codec.grain import Belief
>>> g = Belief("alice", "works_at", "Acme", 0.9, created_at=1737000000000)
>>> quads = grain_to_quads(g)
>>> quads_to_grain(quads) == g
True
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any
from urllib.parse import quote

import msgpack
from pyoxigraph import DefaultGraph, Literal, NamedNode, Quad, RdfFormat, parse

from ..codec import EPOCH, MS, header_for
from ..codec.grain import Grain, namespace_of, system_from
from ..codec.schema import BELIEF, type_for_byte
from ..errors import DecodeError, ErrorCode
from .terms import (
    DEFAULT_SETTINGS,
    GENID,
    PREDICATE_KIND,
    RESERVED,
    SUBJECT_KIND,
    MappingSettings,
    Term,
    entity,
    escaped_term,
    graph_term,
    is_absolute_iri,
    object_term,
    refuse_reserved,
    relation_term,
    subject_term,
)
from .vocab import (
    CLASS_BY_BYTE,
    FIELD_NS,
    OMS,
    PROV,
    RDF,
    RELATED_PROPERTIES,
    XSD,
)

__all__ = [
    "DEFAULT_SETTINGS",  # defined in terms, where texts become terms
    "MappingSettings",  # likewise
    "belief_terms",
    "entity_iri",
    "grain_iri",
    "grain_to_quads",
    "millis_literal",
    "quads_to_grain",
    "relation_iri",
    "relation_pattern",
    "subject_pattern",
]

NIH_PREFIX = "nih:sha-256;"
DEFAULT = DefaultGraph()
BELIEF_BYTE = BELIEF.byte  # re-exported: the byte lives in schema

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
    "invalidation_policy": OMS.invalidationPolicy,
    "provenance_chain": OMS.provenanceChain,
    "context": OMS.context,
    "related_to": OMS.relatedTo,
    "user_id": OMS.userId,
    "temporal_type": OMS.temporalType,
    "supersession_justification": OMS.supersessionJustification,
    "epistemic_status": OMS.epistemicStatus,
}
# Fields whose property carries the effective value: the field, else its default.
EFFECTIVE = frozenset({"valid_from", "system_valid_from", "namespace"})
# Fields written as links instead of a literal (prov:wasDerivedFrom, oms:tag).
_SKIPPED = frozenset({"derived_from", "structural_tags"})
# A belief's terms: written as rdf:subject/predicate/object.
_BELIEF_TERMS = frozenset({"subject", "relation", "object"})


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
    return entity(label, namespace, settings)


def relation_iri(label: str, settings: MappingSettings = DEFAULT_SETTINGS) -> NamedNode:
    """Return the IRI of a relation: ``<base>rel/<label>``, percent-encoded.

    >>> relation_iri("works at").value
    'https://w3id.org/oms-rdf/id/rel/works%20at'
    """
    return NamedNode(f"{settings.base_iri}rel/{pct(label)}")


def _time_nt(ms: int) -> str:
    """A time field as an N-Triples literal (the hot path of every grain's rows)."""
    if 0 <= ms < _YEAR_10000_MS:
        seconds, milli = divmod(ms, 1000)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        return f'"{stamp}.{milli:03d}Z"^^<{_XSD_DATETIME}>'
    return nt_literal(*_lexical_time(ms))


def _lexical_time(ms: int) -> tuple[str, str]:
    try:
        dt = _EPOCH_NAIVE + ms * MS
    except OverflowError:
        return str(ms), _XSD_INTEGER
    return dt.isoformat(timespec="milliseconds") + "Z", _XSD_DATETIME


def millis_literal(ms: int) -> Literal:
    """Return epoch milliseconds as UTC ``xsd:dateTime`` with millisecond precision.

    Values outside years 1-9999 stay ``xsd:integer`` so that nothing is lost.

    >>> millis_literal(1768471200000).value
    '2026-01-15T10:00:00.000Z'
    """
    return _literal(*_lexical_time(ms))


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


def _lexical(value: Any) -> tuple[str, str]:
    """Return the lexical form and datatype IRI that carry one field value exactly."""
    t = type(value)
    if t is str:
        return value, _XSD_STRING
    if t is bool:
        return ("true" if value else "false"), _XSD_BOOLEAN
    if t is int:
        return str(value), _XSD_INTEGER
    if t is float:
        return repr(value), _XSD_DOUBLE
    if t is bytes:
        return base64.b64encode(value).decode(), _XSD_BASE64
    if _has_bytes(value):
        # JSON has no bytes: such a map travels as its canonical MessagePack.
        packed = msgpack.packb(value, use_bin_type=True)
        return base64.b64encode(packed).decode(), OMS.msgpack.value
    return _json(value), RDF.JSON.value


def _literal(text: str, datatype: str) -> Literal:
    return Literal(text, datatype=NamedNode(datatype))


def value_literal(value: Any) -> Literal:
    """Return the literal that carries one field value exactly."""
    return _literal(*_lexical(value))


def literal_value(lit: Literal) -> Any:
    """Return the field value a literal of :func:`value_literal` carries.

    Raises:
        DecodeError: ERR_CORRUPT for a datatype that carries no grain field.
    """
    dt = lit.datatype.value
    text = lit.value
    if dt == _XSD_STRING:
        return text
    if dt == _XSD_INTEGER:
        return int(text)
    if dt == _XSD_DOUBLE:
        return float(text)
    if dt == _XSD_BOOLEAN:
        return text == "true"
    if dt == _XSD_DATETIME:
        return _millis(text)
    if dt == _XSD_BASE64:
        return base64.b64decode(text)
    if dt == RDF.JSON.value:
        return json.loads(text)
    if dt == OMS.msgpack.value:
        return msgpack.unpackb(base64.b64decode(text), raw=False)
    raise DecodeError(
        f"literal of datatype <{dt}> carries no grain field", code=ErrorCode.CORRUPT
    )


# N-Quads text: the store loads grains as text, which is several times faster
# than building a pyoxigraph term object per triple. Terms are N-Triples strings.
Row = tuple[str, str, str, str]  # subject, predicate, object, graph ("" = default)
_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"})


def nt_literal(text: str, datatype: str = "") -> str:
    """Return a literal in N-Triples syntax (``datatype`` "" or xsd:string: plain)."""
    if '"' in text or "\\" in text or "\n" in text or "\r" in text:
        text = text.translate(_ESCAPES)
    if not datatype or datatype == _XSD_STRING:
        return f'"{text}"'
    return f'"{text}"^^<{datatype}>'


def _nt_value(name: str, value: Any) -> str:
    if name in TIME_FIELDS and type(value) is int:
        return _time_nt(value)
    return nt_literal(*_lexical(value))


@lru_cache(maxsize=8192)
def _field_nt(name: str) -> str:
    return f"<{FIELD_NS}{pct(name)}>"


@lru_cache(maxsize=8192)
def _did_nt(did: str) -> str | None:
    """The DID as an IRI term, or None when it is not a valid IRI.

    None too for the store's own IRIs: such a "DID" stays a literal.
    """
    try:
        NamedNode(did)
    except ValueError:
        return None
    if did in RESERVED or did.startswith(GENID):
        return None
    return f"<{did}>" if ":" in did else None


def grain_rows(grain: Grain, settings: MappingSettings = DEFAULT_SETTINGS) -> list[Row]:
    """Return the quads of a grain as N-Triples term strings (see :func:`grain_to_quads`).

    Quads that others determine are left out (design §3): the blob holds the grain
    exactly, so the field literals are there for queries only. A belief's relation
    and object are its ``rdf:predicate``/``rdf:object``; its subject text is written
    only when it is not the IRI itself; derived_from and structural_tags are their
    links; the type string only when it is not the class's own name.
    """
    node = f"<{NIH_PREFIX}{grain.address}>"
    fields = grain.fields
    belief = grain.type_byte == BELIEF_BYTE
    rows: list[Row] = [(node, _P_TYPE, _CLASS_NT.get(grain.type_byte, _GRAIN_NT), "")]
    add = rows.append
    # By name: the quads are a function of the grain, not of the order its fields
    # were given in (a grain made from a dict keeps that order; one read from a
    # blob has the blob's).
    for name, value in sorted(fields.items()):
        if name in _SKIPPED:
            continue
        if belief and name in _BELIEF_TERMS:
            if name == "subject" and not is_absolute_iri(value):
                add((node, _P_SUBJECT_TEXT, nt_literal(value), ""))
            continue
        if name == "type" and _PRIMARY_NAME.get(grain.type_byte) == value:
            continue
        did = _did_nt(value) if name == "author_did" and type(value) is str else None
        if did is not None:
            add((node, _P_ATTRIBUTED, did, ""))  # the DID as an IRI: PROV's link
            continue
        prop = _NAMED_NT.get(name)
        if prop is not None:
            add((node, prop, _nt_value(name, value), ""))
        elif name == "object":
            prop = _P_OBJECT_TEXT if type(value) is str else _P_OBJECT_VALUE
            add((node, prop, nt_literal(*_lexical(value)), ""))
        elif name not in EFFECTIVE:
            add((node, _field_nt(name), _nt_value(name, value), ""))
    # Effective values, always present so that time filters need no COALESCE.
    since = system_from(fields)
    system_nt = _time_nt(since)
    add((node, _P_SYSTEM_FROM, system_nt, ""))
    valid_from = fields.get("valid_from", since)
    valid_nt = system_nt if valid_from == since else _time_nt(valid_from)
    add((node, _P_VALID_FROM, valid_nt, ""))
    add((node, _P_NAMESPACE, nt_literal(namespace_of(fields)), ""))
    for parent in fields.get("derived_from", ()):
        add((node, _P_DERIVED, f"<{NIH_PREFIX}{parent}>", ""))
    for tag in fields.get("structural_tags", ()):
        add((node, _P_TAG, nt_literal(tag), ""))
    for link in fields.get("related_to", ()):
        prop = _RELATED_NT[link["relation_type"]]
        add((node, prop, f"<{NIH_PREFIX}{link['hash']}>", ""))
    if belief:  # last before the blob: knowledge_row() reads them back from here
        s, p, o, g = belief_terms(fields, settings)
        add((node, _P_RDF_SUBJECT, str(s), ""))
        add((node, _P_RDF_PREDICATE, str(p), ""))
        add((node, _P_RDF_OBJECT, str(o), ""))
        if g is not None:
            add((node, _P_GRAPH, str(g), ""))
    blob = base64.b64encode(grain.blob).decode()
    add((node, _P_BLOB, f'"{blob}"^^<{_XSD_BASE64}>', _G_BLOBS))
    return rows


def rows_to_nquads(rows: Iterable[Row]) -> str:
    """Return rows as N-Quads text."""
    return "".join(
        f"{s} {p} {o} {g} .\n" if g else f"{s} {p} {o} .\n" for s, p, o, g in rows
    )


def grain_to_quads(
    grain: Grain, settings: MappingSettings = DEFAULT_SETTINGS
) -> list[Quad]:
    """Return the quads of a grain: its projection in the default graph, its blob in ``oms:blobs``.

    The index layer (status, supersession, ...) is the store's, not part of the grain.
    """
    text = rows_to_nquads(grain_rows(grain, settings))
    return list(parse(text, format=RdfFormat.N_QUADS))


def expected_header(grain: Grain) -> bytes | None:
    """The header this library derives from the fields, or None for application types."""
    if type_for_byte(grain.type_byte) is None:
        return None  # an application type: its byte is known only from the header
    return header_for(grain.fields, grain.type_byte, signed=grain.signed)


def belief_terms(
    fields: Mapping[str, Any], settings: MappingSettings = DEFAULT_SETTINGS
) -> tuple[NamedNode, NamedNode, Term, NamedNode | None]:
    """Return the subject, predicate, object and graph (None: default) a belief asserts.

    As stored: blank nodes are skolem IRIs (see :mod:`oms_rdf.rdf.terms`).

    Raises:
        SchemaError: ERR_SCHEMA when a term is one of the store's own IRIs
            (:func:`oms_rdf.rdf.terms.refuse_reserved`).

    >>> belief_terms({"subject": "_:b0", "relation": "http://example.org/p",
    ...               "object": "Acme"})[0].value
    'https://w3id.org/oms-rdf/.well-known/genid/b0'
    """
    namespace = namespace_of(fields)
    relation, obj = str(fields["relation"]), fields["object"]
    context = fields.get("context")
    context = context if isinstance(context, Mapping) else None
    o: Term = (
        object_term(obj, relation, namespace, context, settings)
        if type(obj) is str
        else value_literal(obj)
    )
    if context is not None and context.get(SUBJECT_KIND) == "n-triples":
        s = escaped_term(str(fields["subject"]), "subject")
    else:
        s = subject_term(str(fields["subject"]), namespace, settings)
    if context is not None and context.get(PREDICATE_KIND) == "n-triples":
        p = escaped_term(relation, "relation")
    else:
        p = relation_term(relation, settings)
    g = graph_term(context)
    for term, role in ((s, "subject"), (p, "relation"), (o, "object"), (g, "graph")):
        if term is not None:
            refuse_reserved(term, role)
    return s, p, o, g


def subject_pattern(text: str) -> tuple[NamedNode, Term]:
    """Return the (predicate, term) that finds the beliefs about a subject text.

    An IRI subject is its ``rdf:subject``; any other text is kept as
    ``oms:subjectText`` (a minted entity's IRI depends on the namespace).
    """
    if is_absolute_iri(text):
        return RDF.subject, NamedNode(text)
    return OMS.subjectText, Literal(text)


def relation_pattern(
    text: str, settings: MappingSettings = DEFAULT_SETTINGS
) -> tuple[NamedNode, Term]:
    """Return the (predicate, term) that finds the beliefs with a relation text."""
    return RDF.predicate, relation_term(text, settings)


def knowledge_row(rows: list[Row]) -> Row | None:
    """Return the knowledge quad of a belief from its :func:`grain_rows`, or None.

    The reification rows carry the same terms, so they are not built twice.
    """
    terms = {p: o for _, p, o, g in rows[-5:] if not g}
    s, p, o = (terms.get(k) for k in (_P_RDF_SUBJECT, _P_RDF_PREDICATE, _P_RDF_OBJECT))
    if s is None or p is None or o is None:
        return None
    return s, p, o, terms.get(_P_GRAPH, _G_CURRENT)


def truthy_triple(
    grain: Grain, settings: MappingSettings = DEFAULT_SETTINGS
) -> Quad | None:
    """Return the knowledge quad a belief asserts as terms, or None for other grains."""
    if grain.type_byte != BELIEF_BYTE:
        return None
    s, p, o, g = belief_terms(grain.fields, settings)
    return Quad(s, p, o, OMS.current if g is None else g)


def quads_to_grain(quads: Iterable[Quad]) -> Grain:
    """Return the grain the quads of :func:`grain_to_quads` describe, verified.

    The blob in graph ``oms:blobs`` is the grain; the other quads are its
    projection for queries, which other quads determine.

    Raises:
        DecodeError: ERR_CORRUPT when the quads hold no blob, or blobs of more than
            one grain.
        IntegrityError: ERR_INTEGRITY when the blob does not hash to its node.
    """
    found: tuple[NamedNode, str] | None = None
    for quad in quads:
        if quad.predicate != OMS.blob or quad.graph_name != OMS.blobs:
            continue
        node, blob = quad.subject, quad.object
        if not isinstance(node, NamedNode) or not isinstance(blob, Literal):
            raise DecodeError(
                f"a blob quad must link a grain node to a literal: {quad}"
            )
        if found is not None and found[0] != node:
            raise DecodeError(
                f"quads describe more than one grain: {found[0]} and {node}"
            )
        found = (node, blob.value)
    if found is None:
        raise DecodeError("no blob (oms:blob in graph oms:blobs) in the quads")
    node, text = found
    try:
        data = base64.b64decode(text, validate=True)
    except ValueError:
        raise DecodeError(f"the blob of {node} is not base64") from None
    return Grain.from_blob(data, address=address_of(node))


# Fields that hold epoch milliseconds, written as xsd:dateTime.
_TIME_NAMES = """
    created_at valid_from valid_to system_valid_from system_valid_to last_accessed_at
    timestamp_ms deadline delegation_expiry last_practiced_at at_ms
"""
TIME_FIELDS = frozenset(_TIME_NAMES.split())


_EPOCH_NAIVE = datetime(1970, 1, 1)
_YEAR_10000_MS = 253_402_300_800_000
_XSD_STRING = XSD.string.value
_XSD_BOOLEAN = XSD.boolean.value
_XSD_INTEGER = XSD.integer.value
_XSD_DOUBLE = XSD.double.value
_XSD_DATETIME = XSD.dateTime.value
_XSD_BASE64 = XSD.base64Binary.value
_NAMED_NT = {name: str(prop) for name, prop in NAMED_FIELDS.items()}
_P_SYSTEM_FROM, _P_VALID_FROM = str(OMS.systemFrom), str(OMS.validFrom)
_P_NAMESPACE, _P_SUBJECT_TEXT = str(OMS.namespace), str(OMS.subjectText)
_PRIMARY_NAME = {byte: t.name for byte in CLASS_BY_BYTE if (t := type_for_byte(byte))}
_CLASS_NT = {byte: str(cls) for byte, cls in CLASS_BY_BYTE.items()}
_GRAIN_NT = str(OMS.Grain)
_RELATED_NT = {
    kind: str(getattr(OMS, prop)) for kind, prop in RELATED_PROPERTIES.items()
}
_P_TYPE = str(RDF.type)
_P_OBJECT_TEXT, _P_OBJECT_VALUE = str(OMS.objectText), str(OMS.objectValue)
_P_RDF_SUBJECT, _P_RDF_PREDICATE = str(RDF.subject), str(RDF.predicate)
_P_RDF_OBJECT, _P_TAG, _P_BLOB = str(RDF.object), str(OMS.tag), str(OMS.blob)
_P_DERIVED, _P_ATTRIBUTED = str(PROV.wasDerivedFrom), str(PROV.wasAttributedTo)
_P_GRAPH = str(OMS.graph)
_G_BLOBS, _G_CURRENT = str(OMS.blobs), str(OMS.current)
