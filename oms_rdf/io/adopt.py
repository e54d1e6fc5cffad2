"""Adopting foreign RDF: every triple (or quad) of a source becomes a belief.

The source is streamed through pyoxigraph's parser, never staged in a store, so
lexical forms, datatypes and blank nodes survive exactly (design §3):

- relative IRIs resolve against ``base_iri`` (default: the file's ``file:`` URI);
- blank nodes get labels derived from the source's bytes and their order of first
  appearance, so the same file adopted twice gives the same terms, and a triple
  that is already believed in the namespace adds nothing;
- named graphs are kept (context key ``rdf:graph``);
- quads in the store's reserved graphs and RDF 1.2 triple terms are refused with an
  :class:`OmsError` that names the source line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

import pyoxigraph as ox

from ..codec.grain import DEFAULT_NAMESPACE, Grain
from ..errors import ErrorCode, OmsError, SchemaError, StoreError
from ..rdf.mapping import Row, address_of, grain_belief_terms
from ..rdf.terms import (
    GRAPH,
    blank_text,
    minted_namespace,
    object_fields,
    relation_fields,
    skolem,
    subject_fields,
)
from ..rdf.vocab import OMS, RDF
from ..store import RESERVED_GRAPHS, BulkImport, GrainStore
from .plans import Known
from .records import ImportReport, fail_or_skip
from .sources import Progress, line_of, parse_source, prefix_rows

ADOPT_CACHE = 250_000  # new beliefs kept from the checking pass instead of re-reading

__all__ = ["SourceInfo", "adopted_grain", "file_base", "plan_adoption", "scan"]


class SourceInfo:
    """What a first read of a source tells: its digest, whether it is our export,
    and whether its bytes mention a journal (then it never takes the fast restore,
    whose checks come after the load)."""

    def __init__(self, digest: str, ours: bool, journal: bool = False) -> None:
        self.digest, self.ours, self.journal = digest, ours, journal


def scan(
    reopen: Callable[[], IO[bytes]], fmt: ox.RdfFormat, base_iri: str | None
) -> SourceInfo:
    """Read a source once: the SHA-256 of its bytes, and whether it carries grains."""
    digest = hashlib.sha256()
    journal, tail = False, b""
    with reopen() as raw:
        while chunk := raw.read(1 << 20):
            digest.update(chunk)
            journal = journal or b"journal" in tail + chunk[:8]
            journal = journal or b"journal" in chunk
            tail = chunk[-8:]
    # Ours: blobs in graph oms:blobs, or a grain layer flattened into one graph
    # (the turtle/ntriples export with grains=True); or, for the export of a store
    # without grains, the store's settings there.
    blobs = OMS.blobs if fmt.supports_datasets else ox.DefaultGraph()
    index = OMS.index if fmt.supports_datasets else ox.DefaultGraph()
    with reopen() as raw:
        ours = any(
            (q.predicate == OMS.blob and q.graph_name == blobs)
            or (q.subject == OMS.settings and q.graph_name == index)
            for q in parse_source(raw, fmt, base_iri)
        )
    return SourceInfo(digest.hexdigest(), ours, journal)


class _Labels:
    """Blank node labels from the source digest and order of first appearance."""

    def __init__(self, digest: str) -> None:
        self.digest = digest
        self.seen: dict[str, str] = {}

    def __call__(self, node: ox.BlankNode) -> ox.BlankNode:
        label = self.seen.get(node.value)
        if label is None:
            n = len(self.seen)
            label = "b" + hashlib.sha256(f"{self.digest}:{n}".encode()).hexdigest()[:32]
            self.seen[node.value] = label
        return ox.BlankNode(label)


def _relabel(term: Any, labels: _Labels) -> Any:
    return labels(term) if isinstance(term, ox.BlankNode) else term


def adopted_grain(
    quad: ox.Quad,
    store: GrainStore,
    *,
    namespace: str | None,
    confidence: float,
    created: int,
) -> Grain:
    """Return the belief that asserts one (relabelled) source quad, exactly.

    Raises:
        SchemaError: ERR_SCHEMA for a term a belief cannot hold (an RDF 1.2 triple
            term, an IRI that is not NFC), or a quad in a reserved graph.
    """
    refuse_reserved(quad)
    graph, settings = quad.graph_name, store.settings
    if namespace is None:
        # An entity minted by an oms_rdf store (its Turtle, say) comes back as the
        # label and namespace it was minted from.
        namespace = minted_namespace(quad.subject, settings)
    ns = namespace if namespace is not None else DEFAULT_NAMESPACE
    subject_part = subject_fields(quad.subject, ns, settings)
    relation_part = relation_fields(quad.predicate, settings)
    relation = None if relation_part is None else relation_part[0]
    obj = (
        None if relation is None else object_fields(quad.object, relation, ns, settings)
    )
    if subject_part is None or relation_part is None or obj is None:
        raise SchemaError(
            f"the triple {quad.subject} {quad.predicate} {quad.object} holds an RDF "
            "1.2 triple term, which a belief cannot carry; adopt it as RDF 1.1 "
            "(reify it with rdf:subject/rdf:predicate/rdf:object) instead",
            code=ErrorCode.SCHEMA,
        )
    text, context = obj
    subject, relation = subject_part[0], relation_part[0]
    context |= subject_part[1] | relation_part[1]
    if isinstance(graph, ox.NamedNode):
        context[GRAPH] = graph.value
    elif isinstance(graph, ox.BlankNode):
        context[GRAPH] = blank_text(graph.value)
    fields = {
        "type": "belief",
        "subject": subject,
        "relation": relation,
        "object": text,
        "confidence": confidence,
        "source_type": "imported",
        "created_at": created,
        "namespace": None if namespace == DEFAULT_NAMESPACE else namespace,
        "context": context or None,
    }
    grain = Grain.from_dict(fields)
    # The grain must give the quad back exactly (as stored: blank nodes skolemised);
    # the codec normalises text to NFC, so this is checked on the encoded grain.
    given = tuple(skolem(t) for t in (quad.subject, quad.predicate, quad.object))
    s, p, o, g = grain_belief_terms(grain, settings)
    if (s, p, o) != given or (g or ox.DefaultGraph()) != skolem(graph):
        raise SchemaError(
            f"the triple {quad.subject} {quad.predicate} {quad.object} cannot be "
            f"kept exactly as a belief (it would read back as {s} {p} {o})",
            code=ErrorCode.SCHEMA,
        )
    return grain


def refuse_reserved(quad: ox.Quad) -> None:
    """Refuse a quad in one of the store's reserved graphs (oms:current, the
    index, the blobs, the audit): no belief is about them.

    Raises:
        SchemaError: ERR_SCHEMA.
    """
    graph = quad.graph_name
    if graph in RESERVED_GRAPHS:
        raise SchemaError(
            f"the quad {quad} names the store's reserved graph {graph}; only the "
            "store writes it (and an oms_rdf export whose grains verify may fill it)",
            code=ErrorCode.SCHEMA,
        )


@contextmanager
def plan_adoption(
    target: BulkImport,
    reopen: Callable[[], IO[bytes]],
    fmt: ox.RdfFormat,
    source: SourceInfo,
    report: ImportReport,
    skip: bool,
    progress: Progress,
    *,
    namespace: str | None,
    confidence: float,
    base_iri: str | None,
) -> Iterator[Callable[[], Iterator[Row]]]:
    """Check every triple of a foreign source, then yield the rows of the new beliefs.

    Into a store that holds no grain, unless refused triples are to be skipped,
    one read checks and gives the rows as it goes: a refusal met on the way
    leaves the store as it was all the same (the write is whole or undone, see
    :meth:`~oms_rdf.store.core.Core.bulk`), and the rows are loaded while the
    source is still being read.
    """
    read = _Adoption(
        target.store,
        reopen,
        fmt,
        source.digest,
        base_iri,
        namespace=namespace,
        confidence=confidence,
    )
    known = Known(target, report)  # an erased belief never comes back: skipped
    if target.empty and not skip:
        yield _at_once(read, known, progress)
        return
    yield _checked_first(read, known, skip, progress)


def _checked_first(
    read: _Adoption, known: Known, skip: bool, progress: Progress
) -> Callable[[], Iterator[Row]]:
    """The rows of a source's new beliefs, once every triple is checked: those
    a current belief of their namespace already asserts are not new."""
    store, report = read.store, known.report
    # Within one adoption every belief shares its confidence, namespace and time, so
    # equal claims are equal grains: the address tells repeats apart.
    empty = store.is_empty()  # then nothing is believed yet: no lookups
    believed = _Believed(store)
    seen: set[str] = set()
    new: set[str] = set()
    kept: list[Grain] | None = []  # the new grains, while they fit the cache
    for grain in read.grains(report, skip, progress):
        if grain.address in seen:
            continue
        seen.add(grain.address)
        if known.erased(grain.address):
            continue
        if not empty and believed(grain):
            report.believed += 1
            continue
        new.add(grain.address)
        if kept is not None:
            kept.append(grain)
            if len(kept) > ADOPT_CACHE:
                kept = None  # a large source: read it again rather than hold it
    report.added = len(new)

    def fresh() -> Iterator[Grain]:
        if kept is not None:
            yield from kept
            return
        done: set[str] = set()
        for grain in read.grains():
            if grain.address in new and grain.address not in done:
                done.add(grain.address)
                yield grain

    def rows() -> Iterator[Row]:
        for grain in fresh():
            yield from store.rows_for(grain)
        yield from prefix_rows(store, read.declared)  # its @prefix lines, kept

    return rows


def _at_once(
    read: _Adoption, known: Known, progress: Progress
) -> Callable[[], Iterator[Row]]:
    """The rows of a source's new beliefs, checked as they are read (a store
    without grains believes nothing yet: each new claim is a new belief, unless
    it was erased here)."""
    store, report = read.store, known.report

    def rows() -> Iterator[Row]:
        seen: set[str] = set()
        for grain in read.grains(report, False, progress):
            if grain.address not in seen:
                seen.add(grain.address)
                if known.erased(grain.address):
                    continue
                report.added += 1
                yield from store.rows_for(grain)
        yield from prefix_rows(store, read.declared)

    return rows


class _Adoption:
    """The beliefs of a foreign source, one per quad, read as often as needed."""

    def __init__(
        self,
        store: GrainStore,
        reopen: Callable[[], IO[bytes]],
        fmt: ox.RdfFormat,
        digest: str,
        base_iri: str | None,
        *,
        namespace: str | None,
        confidence: float,
    ) -> None:
        self.store, self.reopen, self.fmt = store, reopen, fmt
        self.digest, self.base_iri = digest, base_iri
        self.namespace, self.confidence = namespace, confidence
        self.created = store.clock()  # adoption happens at the store's now
        self.declared: dict[str, str] = {}  # the source's prefixes, from the check

    def grains(
        self,
        report: ImportReport | None = None,
        skip: bool = False,
        progress: Progress = None,
    ) -> Iterator[Grain]:
        """The source's beliefs in its order; with ``report`` (the checking
        read), a quad no belief can hold is reported, or stops the import."""
        labels = _Labels(self.digest)
        with self.reopen() as raw:
            declared = self.declared if report is not None else None
            quads = parse_source(raw, self.fmt, self.base_iri, progress, declared)
            blank = ox.BlankNode
            for quad in quads:
                if (
                    type(quad.subject) is blank
                    or type(quad.object) is blank
                    or type(quad.graph_name) is blank
                ):  # most triples have none: no new quad for them
                    quad = ox.Quad(
                        _relabel(quad.subject, labels),
                        quad.predicate,
                        _relabel(quad.object, labels),
                        _relabel(quad.graph_name, labels),
                    )
                try:
                    grain = adopted_grain(
                        quad,
                        self.store,
                        namespace=self.namespace,
                        confidence=self.confidence,
                        created=self.created,
                    )
                except OmsError as exc:
                    if report is not None:
                        fail_or_skip(report, skip, line_of(self.reopen, quad), exc)
                    continue
                yield grain


def _claim(grain: Grain) -> str:
    """What a belief asserts, exactly: subject, relation, object and how to read it."""
    f = grain.fields
    return json.dumps(
        [f["subject"], f["relation"], f["object"], f.get("context")], sort_keys=True
    )


class _Believed:
    """Whether a current belief of the grain's namespace already asserts its claim.

    A subject's current claims are read once (by pattern, from its ``rdf:subject``)
    and kept, so a file that repeats a subject costs one read per subject.
    """

    def __init__(self, store: GrainStore) -> None:
        self.store = store
        self.claims: dict[tuple[Any, str], set[str]] = {}

    def __call__(self, grain: Grain) -> bool:
        s, p, o, g = grain_belief_terms(grain, self.store.settings)
        backend = self.store.backend
        if next(backend.quads(s, p, o, OMS.current if g is None else g), None) is None:
            return False  # nobody asserts it now: the common case, one lookup
        namespace = grain.namespace
        claims = self.claims.get((s, namespace))
        if claims is None:
            claims = self.claims[(s, namespace)] = set()
            for q in backend.quads(None, RDF.subject, s, ox.DefaultGraph()):
                node = q.subject
                if not isinstance(node, ox.NamedNode) or next(
                    backend.quads(node, OMS.systemTo, None, OMS.index), None
                ):
                    continue
                other = self.store.get(address_of(node))
                if other.namespace == namespace:
                    claims.add(_claim(other))
        return _claim(grain) in claims


def file_base(src: Any) -> str | None:
    """The base IRI of a source path: its absolute ``file:`` URI."""
    from pathlib import Path

    if hasattr(src, "read"):
        return None
    try:
        return Path(src).resolve().as_uri()
    except (OSError, ValueError) as exc:
        raise StoreError(
            f"cannot resolve {src}: {exc}", code=ErrorCode.NOT_FOUND
        ) from exc
