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
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from pyoxigraph import DefaultGraph, Literal, NamedNode, Quad, RdfFormat, parse

from ..codec import header_for
from ..codec.grain import Grain, namespace_of, system_from
from ..codec.schema import BELIEF, type_for_byte
from ..errors import DecodeError, SchemaError
from .literals import (
    Row,
    lexical,
    literal_value,
    millis_literal,
    nt_literal,
    time_nt,
    value_literal,
)
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
    "TIME_FIELDS",
    "MappingSettings",  # defined in terms too
    "Row",  # Row, literal_value, millis_literal, nt_literal: defined in literals
    "belief_terms",
    "entity_iri",
    "grain_iri",
    "grain_to_quads",
    "literal_value",
    "millis_literal",
    "nt_literal",
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


def _nt_value(name: str, value: Any) -> str:
    if name in TIME_FIELDS and type(value) is int:
        return time_nt(value)
    return nt_literal(*lexical(value))


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
    links; the type string only when it is not the class's own name; the creation
    time only when it is not the system time ``oms:systemFrom`` already carries.
    """
    node = f"<{NIH_PREFIX}{grain.address}>"
    fields = grain.fields
    belief = grain.type_byte == BELIEF_BYTE
    rows: list[Row] = [(node, _P_TYPE, _CLASS_NT.get(grain.type_byte, _GRAIN_NT), "")]
    add = rows.append
    # By name: the quads are a function of the grain, not of the order its fields
    # were given in (a grain made from a dict keeps that order; one read from a
    # blob has the blob's).
    since = system_from(fields)
    for name, value in sorted(fields.items()):
        if name in _SKIPPED:
            continue
        if name == "created_at" and value == since:
            continue  # oms:systemFrom carries it (ontology README): left to the blob
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
            add((node, prop, nt_literal(*lexical(value)), ""))
        elif name not in EFFECTIVE:
            add((node, _field_nt(name), _nt_value(name, value), ""))
    # Effective values, always present so that time filters need no COALESCE.
    system_nt = time_nt(since)
    add((node, _P_SYSTEM_FROM, system_nt, ""))
    valid_from = fields.get("valid_from", since)
    valid_nt = system_nt if valid_from == since else time_nt(valid_from)
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
        s_nt, p_nt, o_nt, g_nt = _belief_nt(grain, settings)
        add((node, _P_RDF_SUBJECT, s_nt, ""))
        add((node, _P_RDF_PREDICATE, p_nt, ""))
        add((node, _P_RDF_OBJECT, o_nt, ""))
        if g_nt is not None:
            add((node, _P_GRAPH, g_nt, ""))
    blob = base64.b64encode(grain.blob).decode()
    add((node, _P_BLOB, f'"{blob}"^^<{XSD.base64Binary.value}>', _G_BLOBS))
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
    plain = _plain_terms(fields, settings)
    if plain is not None:
        return plain[0], plain[1], plain[2], None
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


def _plain_terms(
    fields: Mapping[str, Any], settings: MappingSettings
) -> tuple[NamedNode, NamedNode, Term, tuple[str, str, str]] | None:
    """The terms of a belief with a text object and no context (most of them),
    and their N-Triples texts, from caches: subjects, relations and objects
    repeat. None for any other belief.

    In :func:`belief_terms`' order: the object is made first, then the subject
    and relation; then they are checked against the store's own IRIs, subject
    first.
    """
    obj = fields["object"]
    if type(obj) is not str or fields.get("context") is not None:
        return None
    namespace = namespace_of(fields)
    relation = str(fields["relation"])
    o = _plain_object(obj, relation, namespace, settings)
    s = subject_term(str(fields["subject"]), namespace, settings)
    p = relation_term(relation, settings)
    s_nt, p_nt, o_nt = _unreserved_nt(s), _unreserved_nt(p), _unreserved_nt(o)
    if s_nt is None or p_nt is None or o_nt is None:
        for term, role in ((s, "subject"), (p, "relation"), (o, "object")):
            refuse_reserved(term, role)
    assert s_nt is not None and p_nt is not None and o_nt is not None
    return s, p, o, (s_nt, p_nt, o_nt)


def grain_belief_terms(
    grain: Grain, settings: MappingSettings = DEFAULT_SETTINGS
) -> tuple[NamedNode, NamedNode, Term, NamedNode | None]:
    """:func:`belief_terms` of a belief grain, kept by address for a while.

    An import asks twice for the same grain's terms (its check, then its rows):
    the second time is a look-up.
    """
    key = (grain.address, settings)
    found = _TERMS.get(key)
    if found is None:
        found = belief_terms(grain.fields, settings)
        _keep_terms(key, found)
    return found


def _keep_terms(
    key: tuple[str, MappingSettings],
    terms: tuple[NamedNode, NamedNode, Term, NamedNode | None],
) -> None:
    if len(_TERMS) >= _TERMS_KEPT:
        _TERMS.clear()
    _TERMS[key] = terms


_TERMS: dict[
    tuple[str, MappingSettings], tuple[NamedNode, NamedNode, Term, NamedNode | None]
] = {}
_TERMS_KEPT = 65_536


def _belief_nt(
    grain: Grain, settings: MappingSettings
) -> tuple[str, str, str, str | None]:
    """:func:`belief_terms` as N-Triples texts."""
    plain = _plain_terms(grain.fields, settings)
    if plain is not None:
        # Kept for grain_belief_terms: a grain's rows are made, then what it
        # asserts is asked (GrainFacts.learn).
        _keep_terms((grain.address, settings), (plain[0], plain[1], plain[2], None))
        s_nt, p_nt, o_nt = plain[3]
        return s_nt, p_nt, o_nt, None
    s, p, o, g = grain_belief_terms(grain, settings)
    return str(s), str(p), str(o), None if g is None else str(g)


@lru_cache(maxsize=65_536)
def _plain_object(
    value: str, relation: str, namespace: str, settings: MappingSettings
) -> Term:
    return object_term(value, relation, namespace, None, settings)


@lru_cache(maxsize=65_536)
def _unreserved_nt(term: Term) -> str | None:
    """A term's N-Triples text, or None where :func:`refuse_reserved` refuses it."""
    try:
        refuse_reserved(term, "term")
    except SchemaError:
        return None
    return str(term)


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
