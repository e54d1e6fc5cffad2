"""Imports of mutated exports and of foreign RDF, into a real store, under the laws.

An export of a small real store (history, evidence, a named graph) is mutated the
way a damaged or hostile file differs from a good one: lines or terms dropped,
duplicated, swapped between lines or edited, and quads added in the reserved
graphs (``oms:blobs``, ``oms:index``, ``oms:audit``), the default graph, or on
blank nodes. Foreign RDF (Turtle, N-Triples, RDF/XML, TriG, JSON-LD) is adopted
the same way. Each import goes into a store that already holds a story, so that
what an import must not touch is there to be touched.
"""

from __future__ import annotations

import io
import random
import re
import zlib
from collections.abc import Callable
from functools import cache

import oms_rdf as oms

from . import laws
from .beliefs import NIH, NS, T0, TEXTS, story

BLOB = "https://w3id.org/oms-rdf/ns#blob"
SPECIAL = [f"<{NS}{n}>" for n in ("blobs", "index", "audit", "current", "settings",
                                  "status", "superseded", "retracted", "systemFrom",
                                  "supersededBy", "auditHead", "evidenceFor")]  # fmt: skip
TERMS = [*SPECIAL, f"<{NIH}>", "_:b0", "_:x", "<http://example.org/a>", '"x"', '""',
         '"1"^^<http://www.w3.org/2001/XMLSchema#integer>', '"a"@en', "<>",
         f"<{laws.NIH}{'0' * 64}>", '"AAAA"^^<http://www.w3.org/2001/XMLSchema#base64Binary>',
         '"2026-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>']  # fmt: skip
_TERM = re.compile(
    rb'<[^>\s]*>|_:[A-Za-z0-9_.\-]+|"(?:[^"\\]|\\.)*"(?:@[\w-]+|\^\^<[^>]*>)?'
)


@cache
def exports() -> dict[str, bytes]:
    """A small store in every format an import reads back as a store."""
    store = oms.GrainStore(clock=lambda: T0)
    old = store.put(oms.Belief("carol", "lives_in", "Oslo", 0.9, created_at=T0 - 5))
    store.supersede(
        old, oms.Belief("carol", "lives_in", "Bergen", 0.9, created_at=T0 - 4)
    )
    store.evidence(store.beliefs("carol")[0], "supporting", 0.9)
    store.put(oms.Belief("http://example.org/d", "http://example.org/e", "_:b1", 0.7,
                         created_at=T0 - 3, context={"rdf:graph": "http://example.org/g"}))  # fmt: skip
    bob = store.put(oms.Belief("dave", "likes", "tea", 0.6, created_at=T0 - 2))
    store.retract(bob, reason="wrong")
    out = {}
    for fmt in ("trig", "nquads", "jsonld", "mg", "jsonl"):
        buffer = io.BytesIO()
        store.export(buffer, format=fmt, grains=True)
        out[fmt] = buffer.getvalue()
    return out


FOREIGN = {
    "turtle": b"@prefix ex: <http://example.org/> .\nex:a ex:b ex:c ; ex:n \"N\"@en ;"
              b" ex:k [ ex:m 1 ] .\nex:c a ex:T .\n",
    "ntriples": b"<http://example.org/a> <http://example.org/b> \"x\" .\n"
                b"_:n <http://example.org/b> <http://example.org/c> .\n",
    "rdfxml": b'<?xml version="1.0"?>\n<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"'
              b' xmlns:ex="http://example.org/">\n<rdf:Description rdf:about="http://example.org/a">'
              b"\n<ex:b>x</ex:b>\n<ex:c rdf:resource=\"http://example.org/c\"/>\n"
              b"</rdf:Description>\n</rdf:RDF>\n",
    "trig": b"@prefix ex: <http://example.org/> .\nex:g { ex:a ex:b ex:c . }\nex:a ex:b 2 .\n",
}  # fmt: skip


def _edit_terms(line: bytes, rng: random.Random) -> bytes:
    spans = [m.span() for m in _TERM.finditer(line)]
    if not spans:
        return line
    start, end = rng.choice(spans)
    term = rng.choice(TERMS).encode() if rng.random() < 0.7 else b""
    return line[:start] + term + line[end:]


def mutate_lines(data: bytes, rng: random.Random) -> bytes:
    """Line- and term-level edits, and quads added in the graphs an import must guard."""
    lines = data.split(b"\n")
    for _ in range(rng.choice((1, 1, 2, 3, 6))):
        op = rng.randrange(8)
        lines = lines or [b""]
        at = rng.randrange(len(lines))
        if op == 0:
            del lines[at]
        elif op == 1:
            lines.insert(at, lines[rng.randrange(len(lines))])
        elif op <= 3:
            lines[at] = _edit_terms(lines[at], rng)
        elif op == 4:
            other = rng.randrange(len(lines))
            lines[at], lines[other] = lines[other], lines[at]
        elif op == 5:
            s, p, o = (rng.choice(TERMS) for _ in range(3))
            g = rng.choice([*SPECIAL[:4], "", "_:g", "<http://example.org/g>"])
            lines.insert(at, f"{s} {p} {o} {g} .".encode())
        elif op == 6:
            text = rng.choice(TEXTS)[:200].encode("utf-8", "surrogatepass")
            lines[at] = lines[at].replace(b'"', b'"' + text, 1)
        else:
            line = bytearray(lines[at])
            if line:
                line[rng.randrange(len(line))] = rng.randrange(256)
            lines[at] = bytes(line)
    return b"\n".join(lines)


_STORE: list[oms.GrainStore] = []


def _store() -> oms.GrainStore:
    if not _STORE or len(_STORE[0].core.backend) > 600:
        _STORE[:] = [story()]
    return _STORE[0]


def import_into(data: bytes, fmt: str, store: oms.GrainStore | None = None) -> None:
    """Import ``data`` as ``fmt``; check the laws on what it did or refused."""
    if store is None:  # mostly the story; an empty store writes by another path
        empty = zlib.crc32(data) % 8 == 0
        store = oms.GrainStore(clock=lambda: T0) if empty else _store()
    before = laws.snapshot(store)
    what = f"{fmt} import of {data[:200]!r}"
    try:
        store.import_(io.BytesIO(data), format=fmt)
    except oms.OmsError:
        laws.refused(before, store, what)
        return
    except BaseException:
        _STORE.clear()
        raise
    try:
        laws.accepted(before, store, what)
    except BaseException:
        _STORE.clear()
        raise


def mutated(fmt: str, *, foreign: bool = False) -> Callable[[bytes], None]:
    """A target: the seed mutated as lines, drawn by the input bytes."""

    def run(data: bytes) -> None:
        rng = random.Random(data)
        seed = FOREIGN[fmt] if foreign else exports()[fmt]
        if fmt == "mg" or rng.random() < 0.1:
            from .seeds import mutate

            text = mutate(seed, rng)
        else:
            text = mutate_lines(seed, rng)
        import_into(text, fmt)

    run.__name__ = f"{'adopt' if foreign else 'restore'}_{fmt}"
    return run


TARGETS: dict[str, Callable[[bytes], None]] = {
    **{
        f"restore_{fmt}": mutated(fmt)
        for fmt in ("trig", "nquads", "jsonld", "mg", "jsonl")
    },
    **{f"adopt_{fmt}": mutated(fmt, foreign=True) for fmt in FOREIGN},
}
