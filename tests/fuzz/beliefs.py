"""Beliefs whose texts and ``context`` a hostile caller chose, put into a real store.

A belief's subject, relation, object and namespace texts, and the ``rdf:*`` keys
of its context, are where a caller's text becomes RDF terms and quads. The pools
below hold the texts most likely to confuse that: the store's own IRIs, skolem
IRIs, grain nodes, blank node labels, N-Triples fragments, non-NFC text, control
characters. :func:`fields_from_bytes` turns any bytes into fields drawn from
them (for run.py); :func:`belief_fields` is the same under hypothesis.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

import oms_rdf as oms

from . import laws

NS = "https://w3id.org/oms-rdf/ns#"
GENID = "https://w3id.org/oms-rdf/.well-known/genid/"
NIH = "nih:sha-256;" + "ab" * 32
T0 = 1_800_000_000_000

RESERVED = [NS + n for n in ("blobs", "index", "audit", "current", "settings",
                             "journal", "writer", "grains", "Belief", "status")]  # fmt: skip
TEXTS: list[str] = [
    *RESERVED,
    GENID, GENID + "x", GENID + "b0", NIH, "nih:sha-256;", "nih:sha-256;zz",
    "_:x", "_:b0", "_:", "_:a b", "_:-x", "_:x.",
    "https://w3id.org/oms-rdf/id/entity/shared/alice",
    "https://w3id.org/oms-rdf/id/rel/works_at", "https://w3id.org/oms-rdf/id/",
    "http://example.org/a", "urn:x", "x:", "a:b c", "http://a/<b>", 'http://a/"',
    "http://a/\\u0041", "http://[::1", "mailto:", "file:///etc/passwd",
    "<http://example.org/a>", '"lit"', '"lit"@en', '"1"^^<http://www.w3.org/2001/XMLSchema#integer>',
    "<a> <b> <c> .", "> <http://evil/> <x", "\"}\n INSERT DATA {<a> <b> <c>}",
    "alice", "works_at", "Acme", "", " ", "\t", "\n", "\r\n", "\x00", "\x1f", "\x7f",
    "\u0085", "\u2028", "\ufeff", "\ud7ff", "\U0010ffff", "e\u0301", "\u00e9", "\u212b",
    "\ufb01", "Å", "ﬁ", "\u202e", "日本", "a" * 70_000, "é" * 5_000,
    "en", "EN", "en-US", "x-" + "a" * 9, "123", "en--x", "ltr", "rtl", "LTR", "up",
    "iri", "blank node", "literal", "n-triples", "IRI", "literal ",
    "http://www.w3.org/2001/XMLSchema#integer", "http://www.w3.org/2001/XMLSchema#string",
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString",
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#dirLangString",
    "http://www.w3.org/2001/XMLSchema#dateTime", "http://www.w3.org/2001/XMLSchema#double",
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON", "abc", "1e400", "NaN", "-0",
    "2026-01-01T00:00:00Z", "2026-13-01T00:00:00", "true", "01",
]  # fmt: skip
CONTEXT_KEYS = ["rdf:graph", "rdf:object", "rdf:datatype", "rdf:language",
                "rdf:direction", "rdf:other", "graph", ""]  # fmt: skip
OTHER_VALUES: list[Any] = [
    None,
    1,
    1.5,
    True,
    [],
    {},
    ["iri"],
    {"a": 1},
    b"\x00",
    -(2**63),
]
OBJECTS_NOT_TEXT: list[Any] = [
    1,
    -1,
    0.5,
    2**63,
    True,
    None,
    [],
    {"a": "b"},
    b"x",
    1e308,
]


def _text(rng: random.Random, data: bytes) -> str:
    """A pool text, a slice of the input, or a mix of both."""
    pick = rng.randrange(6)
    if pick <= 2:
        return rng.choice(TEXTS)
    start = rng.randrange(len(data) + 1)
    raw = data[start : start + rng.randrange(1, 40)].decode("utf-8", "replace")
    if pick == 3:
        return raw
    return rng.choice(TEXTS) + raw if pick == 4 else raw + rng.choice(TEXTS)


def fields_from_bytes(data: bytes) -> dict[str, Any]:
    """A belief's fields, every caller-chosen text drawn by ``data``."""
    rng = random.Random(data)
    fields: dict[str, Any] = {
        "type": "belief",
        "subject": _text(rng, data),
        "relation": _text(rng, data),
        "object": _text(rng, data) if rng.random() < 0.9 else rng.choice(OBJECTS_NOT_TEXT),
        "confidence": rng.choice((0.9, 1, 0, 0.5)),
        "created_at": T0 + rng.randrange(3),
    }  # fmt: skip
    if rng.random() < 0.5:
        fields["namespace"] = _text(rng, data)
    if rng.random() < 0.8:
        context: dict[str, Any] = {}
        for key in rng.sample(CONTEXT_KEYS, rng.randrange(1, 5)):
            context[key] = (
                _text(rng, data) if rng.random() < 0.85 else rng.choice(OTHER_VALUES)
            )
        fields["context"] = context
    if rng.random() < 0.1:
        fields["context"] = rng.choice(OTHER_VALUES)
    return fields


texts = st.one_of(st.sampled_from(TEXTS), st.text(max_size=30),
                  st.builds(lambda a, b: a + b, st.sampled_from(TEXTS), st.text(max_size=8)))  # fmt: skip
contexts = st.dictionaries(
    st.sampled_from(CONTEXT_KEYS),
    st.one_of(texts, st.sampled_from(OTHER_VALUES)),
    max_size=5,
)
belief_fields = st.fixed_dictionaries(
    {
        "type": st.just("belief"),
        "subject": texts,
        "relation": texts,
        "object": st.one_of(texts, st.sampled_from(OBJECTS_NOT_TEXT)),
        "confidence": st.sampled_from((0.9, 1, 0)),
        "created_at": st.integers(T0, T0 + 2),
    },
    optional={"namespace": texts, "context": contexts},
)


def story() -> oms.GrainStore:
    """A small store with a current belief, a superseded one and evidence."""
    store = oms.GrainStore(clock=lambda: T0 + 10)
    old = store.put(oms.Belief("alice", "works_at", "Acme", 0.9, created_at=T0 - 2))
    store.supersede(
        old, oms.Belief("alice", "works_at", "Initech", 0.9, created_at=T0 - 1)
    )
    store.put(oms.Belief("http://example.org/a", "http://example.org/b", "http://example.org/c",
                         0.8, created_at=T0 - 1, context={"rdf:object": "iri"}))  # fmt: skip
    return store


_STORE: list[oms.GrainStore] = []


def shared_store() -> oms.GrainStore:
    """The story store, reused across inputs until it grows past a few hundred grains."""
    if not _STORE or len(_STORE[0].core.backend) > 1_000:
        _STORE[:] = [story()]
        laws.whole(_STORE[0], "the story")
    return _STORE[0]


def put_belief(fields: dict[str, Any], store: oms.GrainStore | None = None) -> None:
    """Put ``fields`` as a belief; check the laws on what it did or refused."""
    if store is None:  # mostly the story; an empty store writes by another path
        empty = zlib.crc32(repr(fields).encode("utf-8", "replace")) % 8 == 0
        store = oms.GrainStore(clock=lambda: T0) if empty else shared_store()
    before = laws.snapshot(store)
    what = f"put of {fields!r:.300}"
    try:
        try:
            store.put(fields)
        except oms.OmsError:
            laws.refused(before, store, what)
            return
        laws.accepted(before, store, what)
    except BaseException:
        _STORE.clear()  # a broken law may have left the shared store broken
        raise


def belief(data: bytes) -> None:
    put_belief(fields_from_bytes(data))


TARGETS: dict[str, Callable[[bytes], None]] = {"belief": belief}
