"""Which RDF term a belief's text stands for, and which text an RDF term becomes.

Design §3, the rules:

- Text that is an absolute IRI (a scheme, then no space or character RFC 3987
  forbids) *is* that IRI, as subject, relation or object.
- ``_:label`` as a subject is a blank node. Blank nodes are kept in the store as
  skolem IRIs under :data:`GENID` (RFC 7320 ``.well-known/genid``), because
  Oxigraph renames blank nodes on every text load and SPARQL Update cannot name
  one; every answer and export turns them back into blank nodes.
- Other subjects are minted entities ``<base>entity/<ns>/<label>``; other relations
  ``<base>rel/<label>``.
- An object is what the grain's ``context`` records about it (:data:`OBJECT_KIND`,
  :data:`DATATYPE`, :data:`LANGUAGE`); else an absolute IRI is an IRI, the object
  of an entity relation is an entity, text is an ``xsd:string``, and a map
  ``rdf:JSON`` (see :func:`oms_rdf.rdf.mapping.value_literal`; the spec allows a
  belief's object to be text or a map, and the codec refuses anything else).
- :data:`GRAPH` in ``context`` names the graph the triple belongs to.
- No term a belief asserts may be one of the store's own IRIs (:data:`RESERVED`:
  the reserved graphs, the nodes the store keeps its state on, and the properties
  of a grain's bytes, ``oms:blob`` and ``oms:envelope``), nor an IRI
  under :data:`GENID` spelled out, which would read back as a blank node: a
  belief naming ``oms:blobs`` as its graph would have the store's maintenance
  treat the blobs as knowledge (:func:`refuse_reserved`).

Adoption (:func:`object_fields` and friends) writes exactly what these rules need to
give the source term back, so ``object_term(*object_fields(t)) == t`` for every term.

>>> s = MappingSettings()
>>> subject_term("http://example.org/alice", "shared", s)
<NamedNode value=http://example.org/alice>
>>> subject_term("Alice", "shared", s).value
'https://w3id.org/oms-rdf/id/entity/shared/Alice'
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import quote, unquote

from pyoxigraph import (
    BaseDirection,
    BlankNode,
    Literal,
    NamedNode,
    RdfFormat,
    Triple,
    parse,
)

from ..errors import ErrorCode, SchemaError
from .vocab import DEFAULT_BASE, OMS, XSD

__all__ = [
    "DATATYPE",
    "DEFAULT_SETTINGS",
    "DIRECTION",
    "GENID",
    "GRAPH",
    "LANGUAGE",
    "OBJECT_KIND",
    "PREDICATE_KIND",
    "RESERVED",
    "SUBJECT_KIND",
    "MappingSettings",
    "Term",
    "blank_text",
    "graph_term",
    "is_absolute_iri",
    "minted_namespace",
    "object_fields",
    "object_term",
    "refuse_reserved",
    "relation_fields",
    "relation_term",
    "relation_text",
    "skolem",
    "subject_fields",
    "subject_term",
    "subject_text",
    "unskolem",
]

# Keys in a belief's ``context`` that say what its object (and graph) is in RDF.
OBJECT_KIND = "rdf:object"  # "iri" | "blank node" | "literal" | "n-triples"
# An IRI that is not NFC cannot be grain text (which is NFC): such a subject or
# predicate is kept as N-Triples with every non-ASCII character escaped, and its
# key says so ("n-triples"), as OBJECT_KIND does for objects.
SUBJECT_KIND = "rdf:subject"
PREDICATE_KIND = "rdf:predicate"
DATATYPE = "rdf:datatype"
LANGUAGE = "rdf:language"
DIRECTION = "rdf:direction"  # RDF 1.2 base direction of a language-tagged literal
GRAPH = "rdf:graph"

GENID = "https://w3id.org/oms-rdf/.well-known/genid/"

Term = NamedNode | BlankNode | Literal


@dataclass(frozen=True, slots=True)
class MappingSettings:
    """What the mapping of texts to terms depends on besides the grain.

    Attributes:
        base_iri: prefix of entity and relation IRIs.
        entity_relations: relations whose text objects are entities (IRIs), not
            literals.
    """

    base_iri: str = DEFAULT_BASE
    entity_relations: frozenset[str] = field(default_factory=frozenset)


DEFAULT_SETTINGS = MappingSettings()

# The IRIs the store keeps its own state under: its graphs (design §3, "Reserved
# graphs"), the nodes of its settings, journal and write lock, and the properties
# of a grain's bytes (a triple of them marks a file as the store's own export).
RESERVED = frozenset(
    getattr(OMS, name).value
    for name in "blobs index current audit grains settings journal writer "
    "blob envelope".split()
)

# RFC 3987 absolute IRI, as far as a store needs it: a scheme, a colon, and no
# character the IRI grammar excludes (controls, space, <>"{}|\^`).
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:[^\x00-\x20<>\"{}|\\^`\x7f]*")
_BLANK = re.compile(r"_:[A-Za-z0-9_][A-Za-z0-9_.\-]*")
_XSD_STRING = XSD.string.value


@lru_cache(maxsize=65_536)
def is_absolute_iri(text: str) -> bool:
    """Return whether ``text`` is an absolute IRI, and so stands for that IRI.

    >>> is_absolute_iri("https://example.org/a b"), is_absolute_iri("urn:isbn:1")
    (False, True)
    """
    if _ABSOLUTE.fullmatch(text) is None:
        return False
    try:
        NamedNode(text)
    except ValueError:
        return False
    return True


def _blank(label: str) -> NamedNode:
    return NamedNode(GENID + label)


def _named(text: str, role: str) -> NamedNode:
    """The IRI a text spells, refused under :data:`GENID` (blank nodes are ``_:x``)."""
    if text.startswith(GENID):
        raise SchemaError(
            f"the {role} of a belief is <{text}>, an IRI the store keeps blank nodes "
            "under; write a blank node as _:label",
            code=ErrorCode.SCHEMA,
        )
    return NamedNode(text)


def entity(label: str, namespace: str, settings: MappingSettings) -> NamedNode:
    """Return the minted IRI of a plain label in a namespace."""
    return NamedNode(
        f"{settings.base_iri}entity/{quote(namespace, safe='')}/{quote(label, safe='')}"
    )


@lru_cache(maxsize=65_536)
def _subject(text: str, namespace: str, settings: MappingSettings) -> NamedNode:
    if _BLANK.fullmatch(text):
        return _blank(text[2:])
    if is_absolute_iri(text):
        return _named(text, "subject")
    return entity(text, namespace, settings)


def subject_term(text: str, namespace: str, settings: MappingSettings) -> NamedNode:
    """Return the term a subject text stands for (blank nodes as skolem IRIs)."""
    return _subject(text, namespace, settings)


@lru_cache(maxsize=8192)
def relation_term(text: str, settings: MappingSettings) -> NamedNode:
    """Return the predicate a relation text stands for."""
    if is_absolute_iri(text):
        return _named(text, "relation")
    return NamedNode(f"{settings.base_iri}rel/{quote(text, safe='')}")


def object_term(
    value: str,
    relation: str,
    namespace: str,
    context: Mapping[str, Any] | None,
    settings: MappingSettings,
) -> Term:
    """Return the term a text object stands for (blank nodes as skolem IRIs)."""
    if context:
        kind = context.get(OBJECT_KIND)
        if kind == "iri":
            try:
                return _named(value, "object")
            except ValueError as exc:
                if isinstance(exc, SchemaError):
                    raise
                # not an IRI after all: read as if nothing were recorded
        if kind == "blank node" and _BLANK.fullmatch(value):
            return _blank(value[2:])
        if kind == "n-triples":
            parsed = _parse_term(value)
            if isinstance(parsed, NamedNode):
                return _named(parsed.value, "object")
            if parsed is not None:
                return parsed
        language = context.get(LANGUAGE)
        if isinstance(language, str) and language:
            direction = _DIRECTIONS.get(str(context.get(DIRECTION)))
            try:
                if direction is not None:
                    return Literal(value, language=language, direction=direction)
                return Literal(value, language=language)
            except ValueError:
                pass  # not a tag RDF allows: the text stays a plain literal
        datatype = context.get(DATATYPE)
        if isinstance(datatype, str) and is_absolute_iri(datatype):
            if datatype in _LANG_STRINGS:
                raise SchemaError(
                    f"context rdf:datatype is <{datatype}>, the datatype of literals "
                    "with a language tag; give the tag as rdf:language instead",
                    code=ErrorCode.SCHEMA,
                    path="$.context",
                )
            return Literal(value, datatype=NamedNode(datatype))
        if kind == "literal":
            return Literal(value)
    if is_absolute_iri(value):
        return _named(value, "object")
    if relation in settings.entity_relations:
        return entity(value, namespace, settings)
    return Literal(value)


def escaped_term(text: str, role: str) -> NamedNode:
    """The IRI an ASCII N-Triples text stands for (a ``"n-triples"`` subject or
    predicate).

    Raises:
        SchemaError: ERR_SCHEMA when the text is no N-Triples IRI.
    """
    parsed = _parse_term(text)
    if not isinstance(parsed, NamedNode):
        raise SchemaError(
            f"the {role} is marked as N-Triples text, but {text!r} is no IRI in "
            "N-Triples syntax",
            code=ErrorCode.SCHEMA,
        )
    return _named(parsed.value, role)


def graph_term(context: Mapping[str, Any] | None) -> NamedNode | None:
    """Return the named graph a belief's triple belongs to, or None for the default."""
    if not context:
        return None
    name = context.get(GRAPH)
    if not isinstance(name, str):
        return None
    if _BLANK.fullmatch(name):
        return _blank(name[2:])
    return _named(name, "graph") if is_absolute_iri(name) else None


def refuse_reserved(term: Term, role: str) -> None:
    """Refuse a term a belief asserts when it is one of the store's own IRIs.

    ``role`` says where the term stands (subject, relation, object, graph), for the
    message. A literal's datatype is a term too.

    Raises:
        SchemaError: ERR_SCHEMA for an IRI of :data:`RESERVED`, or an IRI under
            :data:`GENID` spelled out (blank nodes are written ``_:label``).

    >>> refuse_reserved(NamedNode("https://w3id.org/oms-rdf/ns#blobs"), "graph")
    Traceback (most recent call last):
    ...
    oms_rdf.errors.SchemaError: ERR_SCHEMA: ...
    """
    if type(term) is Literal:
        iri, role = term.datatype.value, f"datatype of the {role}"
    elif type(term) is NamedNode:
        iri = term.value
    else:
        return
    if iri in RESERVED:
        raise SchemaError(
            f"the {role} of a belief must not be the store's own IRI <{iri}>: it "
            "names where or how the store keeps its blobs, index or audit, which "
            "only the store writes",
            code=ErrorCode.SCHEMA,
        )


def skolem(term: Any) -> Any:
    """Return a term as the store keeps it: blank nodes become skolem IRIs."""
    if type(term) is BlankNode:
        return _blank(term.value)
    return term


def unskolem(term: Any) -> Any:
    """Return a stored term as the user wrote it: skolem IRIs become blank nodes."""
    if type(term) is NamedNode and term.value.startswith(GENID):
        return BlankNode(term.value[len(GENID) :])
    if type(term) is Triple:
        return Triple(
            unskolem(term.subject), unskolem(term.predicate), unskolem(term.object)
        )
    return term


# --- the other way: the text (and context) that gives a term back -------------------


def blank_text(label: str) -> str:
    """Return the subject text of a blank node label."""
    return "_:" + label


def _minted(iri: str, prefix: str) -> str | None:
    return unquote(iri[len(prefix) :]) if iri.startswith(prefix) else None


def minted_namespace(term: Any, settings: MappingSettings) -> str | None:
    """Return the namespace an entity IRI of this store's base was minted in, or None.

    >>> minted_namespace(entity("alice", "work", DEFAULT_SETTINGS), DEFAULT_SETTINGS)
    'work'
    """
    if not isinstance(term, NamedNode):
        return None
    rest = _minted(term.value, f"{settings.base_iri}entity/")
    if rest is None or "/" not in rest:
        return None
    encoded = term.value[len(f"{settings.base_iri}entity/") :].split("/", 1)[0]
    namespace = unquote(encoded)
    label = _minted(term.value, f"{settings.base_iri}entity/{encoded}/")
    if label is None or entity(label, namespace, settings) != term:
        return None
    return namespace


def subject_text(term: Any, namespace: str, settings: MappingSettings) -> str | None:
    """Return the subject text that stands for ``term`` in ``namespace``, or None.

    A minted entity IRI of this store's base in the same namespace gives its label
    back, so our own Turtle adopted by another store gives the same beliefs.
    """
    if isinstance(term, BlankNode):
        return blank_text(term.value)
    if not isinstance(term, NamedNode):
        return None
    label = _minted(
        term.value, f"{settings.base_iri}entity/{quote(namespace, safe='')}/"
    )
    if label is not None and subject_term(label, namespace, settings) == term:
        return label
    return term.value


def subject_fields(
    term: Any, namespace: str, settings: MappingSettings
) -> tuple[str, dict[str, str]] | None:
    """The subject text and the context entries that give ``term`` back, or None.

    An IRI that is not NFC is kept as escaped N-Triples (:data:`SUBJECT_KIND`).
    """
    if isinstance(term, NamedNode) and not unicodedata.is_normalized("NFC", term.value):
        return _ascii_nt(term), {SUBJECT_KIND: "n-triples"}
    text = subject_text(term, namespace, settings)
    return None if text is None else (text, {})


def relation_fields(
    term: Any, settings: MappingSettings
) -> tuple[str, dict[str, str]] | None:
    """The relation text and the context entries that give ``term`` back, or None.

    An IRI that is not NFC is kept as escaped N-Triples (:data:`PREDICATE_KIND`).
    """
    if isinstance(term, NamedNode) and not unicodedata.is_normalized("NFC", term.value):
        return _ascii_nt(term), {PREDICATE_KIND: "n-triples"}
    text = relation_text(term, settings)
    return None if text is None else (text, {})


def relation_text(term: Any, settings: MappingSettings) -> str | None:
    """Return the relation text that stands for a predicate, or None."""
    if not isinstance(term, NamedNode):
        return None
    label = _minted(term.value, f"{settings.base_iri}rel/")
    if label and relation_term(label, settings) == term:
        return label
    return term.value


def object_fields(
    term: Any, relation: str, namespace: str, settings: MappingSettings
) -> tuple[str, dict[str, str]] | None:
    """Return the object text and the context entries that give ``term`` back.

    Context is recorded only where the default reading of the text would differ.
    None for a term a belief cannot hold (an RDF 1.2 triple term).
    """
    if isinstance(term, BlankNode):
        return blank_text(term.value), {OBJECT_KIND: "blank node"}
    if isinstance(term, NamedNode):
        if relation in settings.entity_relations:
            label = _minted(
                term.value, f"{settings.base_iri}entity/{quote(namespace, safe='')}/"
            )
            if label is not None and not is_absolute_iri(label):
                return label, {}
        if not unicodedata.is_normalized("NFC", term.value):
            return _ascii_nt(term), {OBJECT_KIND: "n-triples"}  # grain text is NFC
        return term.value, ({} if is_absolute_iri(term.value) else {OBJECT_KIND: "iri"})
    if not isinstance(term, Literal):
        return None
    text, language = term.value, term.language
    if text == "" or not unicodedata.is_normalized("NFC", text):
        # A belief's object is never "" and grain text is NFC: such literals are
        # kept as N-Triples with every non-ASCII character escaped.
        return _ascii_nt(term), {OBJECT_KIND: "n-triples"}
    if language:
        direction = getattr(term, "direction", None)
        if direction is not None:
            return text, {LANGUAGE: language, DIRECTION: str(direction)}
        return text, {LANGUAGE: language}
    if term.datatype.value != _XSD_STRING:
        return text, {DATATYPE: term.datatype.value}
    if is_absolute_iri(text) or relation in settings.entity_relations:
        return text, {OBJECT_KIND: "literal"}
    return text, {}


def _ascii_nt(term: Literal | NamedNode) -> str:
    return "".join(
        c
        if ord(c) < 0x80
        else (f"\\u{ord(c):04X}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08X}")
        for c in str(term)
    )


def _parse_term(text: str) -> Literal | NamedNode | None:
    try:
        quad = next(parse(f"<urn:s> <urn:p> {text} .", format=RdfFormat.N_TRIPLES))
    except (SyntaxError, StopIteration):
        return None
    return quad.object if isinstance(quad.object, Literal | NamedNode) else None


_DIRECTIONS = {"ltr": BaseDirection.LTR, "rtl": BaseDirection.RTL}
# RDF gives these datatypes only with a language tag, which the tag says.
_LANG_STRINGS = frozenset(
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#" + name
    for name in ("langString", "dirLangString")
)
