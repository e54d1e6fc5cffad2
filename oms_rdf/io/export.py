"""Writing a store out in every format."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pyoxigraph as ox

from ..codec.grain import Grain
from ..errors import ErrorCode, NotFoundError, SchemaError, StoreError
from ..rdf.mapping import NIH_PREFIX, literal_value
from ..rdf.vocab import OMS
from ..store import PREFIXES as STORE_PREFIXES
from ..store import GrainStore
from ..times import TimeLike
from .container import tombstone_entry, write_mg
from .formats import PREFIXES, RDF_FORMATS, TURTLE_PREFIXES, format_for
from .jsonl import dumps_jsonl, dumps_tombstone
from .manifest import manifest_entry
from .records import term_text
from .sources import Source, open_output, recorded_prefixes


def export(
    store: GrainStore,
    dest: Source,
    *,
    format: str | None = None,
    valid_at: TimeLike | None = None,
    as_of: TimeLike | None = None,
    namespace: str | None = None,
    grains: bool | None = None,
) -> int:
    """Write the store to ``dest`` (a path or a binary file); return what was written.

    ``turtle``, ``ntriples`` and ``rdfxml`` write the plain knowledge, and so do
    ``trig``, ``nquads`` and ``jsonld`` with ``grains=False`` (named graphs kept;
    Turtle and TriG declare the store's prefixes and its adopted sources'): the knowledge
    held now, or the snapshot of ``valid_at``/``as_of``, or one ``namespace``, with
    the exact terms the grains record. They return the number of triples (quads).
    The other formats, and ``turtle``/``ntriples`` with ``grains=True`` (the grain
    layer with its index state, flattened into one graph), carry the grains and
    return their number.
    """
    fmt = _format(dest, format)
    plain = fmt in PLAIN_FORMATS if grains is None else not grains
    if plain:
        if fmt not in (*PLAIN_FORMATS, "trig", "nquads", "jsonld"):
            raise SchemaError(
                f"{fmt} carries grains; plain knowledge goes to turtle, ntriples, "
                "rdfxml, trig, nquads or jsonld",
                code=ErrorCode.SCHEMA,
            )
        view = store.snapshot(valid_at=valid_at, as_of=as_of, namespace=namespace)
        if not RDF_FORMATS[fmt].supports_datasets:
            _refuse_named_graphs(view.quads, fmt)
        with _writing(dest) as out:
            # One namespace's view declares only the store's own prefixes: the
            # adopted sources' may name what other namespaces hold.
            declared = prefixes_of(store) if namespace is None else dict(STORE_PREFIXES)
            _plain(view.quads, out, RDF_FORMATS[fmt], declared)
        return len(view)
    if valid_at is not None or as_of is not None or namespace is not None:
        raise SchemaError(
            "valid_at, as_of and namespace select plain knowledge (grains=False); "
            "an export that carries grains carries their whole history",
            code=ErrorCode.SCHEMA,
        )
    with _writing(dest) as out:
        if fmt == "mg":
            manifest = _manifest(store, envelopes=True)
            return write_mg(_blobs(store), out, manifest=manifest, deduplicated=True)
        if fmt == "jsonl":
            return _write_jsonl(store, out)
        _write_rdf(store, out, fmt)
    return len(store)


def prefixes_of(store: GrainStore) -> dict[str, str]:
    """The prefixes a plain Turtle or TriG export declares: the store's own, then
    its adopted sources' (see :func:`.sources.recorded_prefixes`)."""
    return recorded_prefixes(store)


def _write_jsonl(store: GrainStore, out: IO[bytes]) -> int:
    """Write every grain as a JSON line with its state, then the tombstones;
    return the number of grains."""
    count = 0
    indexed = _indexed(store)
    for blob in _blobs(store):
        grain = Grain.from_blob(blob)
        state = (
            manifest_entry(store, grain.address) if grain.address in indexed else None
        )
        line = dumps_jsonl(grain, state or None, _envelope(store, grain))
        out.write(line.encode() + b"\n")
        count += 1
    # The tombstones last: an import honours them whatever their place.
    for address, erased_at in _tombstones(store):
        out.write(dumps_tombstone(address, erased_at).encode() + b"\n")
    return count


def _write_rdf(store: GrainStore, out: IO[bytes], fmt: str) -> None:
    """Write the grains in an RDF format: every graph, or the grain layer."""
    rdf = RDF_FORMATS[fmt]
    triples: Iterable[Any]
    if fmt in PLAIN_FORMATS:
        triples = _grain_layer(store)
    elif fmt == "turtle12":
        quads = store.backend.quads(None, None, None, ox.DefaultGraph())
        triples = _with_reifiers(
            store, (ox.Triple(q.subject, q.predicate, q.object) for q in quads)
        )
    elif fmt == "trig12":
        triples = _with_reifiers(store, store.backend.quads(), quads=True)
    else:
        triples = store.backend.quads()
    declared = rdf in (ox.RdfFormat.TURTLE, ox.RdfFormat.TRIG)
    ox.serialize(triples, out, format=rdf, prefixes=PREFIXES if declared else None)


PLAIN_FORMATS = ("turtle", "ntriples", "rdfxml")


def _refuse_named_graphs(quads: list[ox.Quad], fmt: str) -> None:
    """Refuse a triple format for knowledge that named graphs hold: it would
    leave them out without a word.

    Raises:
        SchemaError: ERR_SCHEMA naming the graphs, before anything is written.
    """
    named = sorted(
        {
            str(q.graph_name)
            for q in quads
            if not isinstance(q.graph_name, ox.DefaultGraph)
        }
    )
    if named:
        shown = ", ".join(named[:3]) + (
            f" and {len(named) - 3} more" if named[3:] else ""
        )
        raise SchemaError(
            f"{fmt} holds one graph, and this knowledge is in named graphs too "
            f"({shown}); export it as trig, nquads or jsonld, which keep them",
            code=ErrorCode.SCHEMA,
        )


def _plain(
    quads: list[ox.Quad], out: IO[bytes], rdf: ox.RdfFormat, declared: dict[str, str]
) -> None:
    """Write plain knowledge with its exact terms (a triple format: the default
    graph), Turtle and TriG with ``declared`` (the store's prefixes and its adopted
    sources') declared."""
    items: Iterable[Any] = quads
    if not rdf.supports_datasets:
        items = (
            ox.Triple(q.subject, q.predicate, q.object)
            for q in quads
            if isinstance(q.graph_name, ox.DefaultGraph)
        )
    prefixes = declared if rdf in (ox.RdfFormat.TURTLE, ox.RdfFormat.TRIG) else None
    ox.serialize(items, out, format=rdf, prefixes=prefixes)


@contextmanager
def _writing(dest: Source) -> Iterator[IO[bytes]]:
    """Open ``dest`` to write it whole, or refuse with the code of the fault,
    naming the path the caller gave (never the ``.partial`` file beside it).

    Raises:
        NotFoundError: ERR_NOT_FOUND when the folder of ``dest`` does not exist.
        StoreError: ERR_STORE when ``dest`` is a folder or cannot be written.
    """
    if hasattr(dest, "write"):
        with open_output(dest, "wb") as out:
            yield out
        return
    path = Path(dest)
    if not path.parent.is_dir():
        raise NotFoundError(
            f"cannot export to {dest}: expected an existing folder; found no folder "
            f"{path.parent}",
            path=str(dest),
        )
    try:
        # A name the file system refuses (too long) fails here already.
        if path.is_dir():
            raise StoreError(
                f"cannot export to {dest}: expected a file's path; found a folder",
                path=str(dest),
            )
        with open_output(dest, "wb") as out:
            yield out
    except OSError as exc:
        raise StoreError(
            f"cannot write {dest}: {exc.strerror or exc}", path=str(dest)
        ) from exc


def _format(dest: Source, given: str | None) -> str:
    if hasattr(dest, "write"):
        return format_for("x", given or "trig")
    return format_for(dest, given)


def _grain_layer(store: GrainStore) -> Iterator[ox.Triple]:
    """The grain nodes, their blobs and index state as one graph (no knowledge, no audit)."""
    for graph in (ox.DefaultGraph(), OMS.blobs, OMS.index):
        for q in store.backend.quads(None, None, None, graph):
            yield ox.Triple(q.subject, q.predicate, q.object)


def dumps_turtle(triples: Iterable[ox.Triple]) -> str:
    """Return triples as Turtle text (the common prefixes declared)."""
    buffer = io.BytesIO()
    ox.serialize(triples, buffer, format=ox.RdfFormat.TURTLE, prefixes=TURTLE_PREFIXES)
    return buffer.getvalue().decode()


def _with_reifiers(
    store: GrainStore, items: Iterable[Any], *, quads: bool = False
) -> Iterator[Any]:
    """The items, then ``<grain> rdf:reifies <<( s p o )>>`` for every belief (RDF 1.2)."""
    yield from items
    reifies = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies")
    rows = store.backend.query(
        "PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> "
        "SELECT ?g ?s ?p ?o WHERE { ?g rdf:subject ?s ; rdf:predicate ?p ; rdf:object ?o }"
    )
    for row in rows:
        triple = ox.Triple(row["s"], row["p"], row["o"])
        yield (
            ox.Quad(row["g"], reifies, triple, ox.DefaultGraph())
            if quads
            else ox.Triple(row["g"], reifies, triple)
        )


def _envelope(store: GrainStore, grain: Grain) -> bytes | None:
    """The COSE_Sign1 envelope a signed grain arrived in, as the store keeps it."""
    if not grain.signed:
        return None
    node = ox.NamedNode(NIH_PREFIX + grain.address)
    quad = next(store.backend.quads(node, OMS.envelope, None, OMS.blobs), None)
    return None if quad is None else base64.b64decode(term_text(quad.object))


def _blobs(store: GrainStore) -> Iterator[bytes]:
    for q in store.backend.quads(None, OMS.blob, None, OMS.blobs):
        yield base64.b64decode(term_text(q.object))


def _manifest(
    store: GrainStore, *, envelopes: bool = False
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Index state of every grain whose state is not the default (spec §11.7), as
    ``(address, entry)`` pairs in ascending address order, made one at a time.

    With ``envelopes`` (``.mg``, whose blobs are bare), a signed grain's COSE_Sign1
    envelope goes in its entry as ``oms_rdf:envelope``, so that it comes back
    signed and verified, and each erased grain has a tombstone entry
    (``{"oms_rdf:erased": T}``), so that no import brings it back.
    """
    signed = (
        {
            term_text(q.subject).removeprefix(NIH_PREFIX)
            for q in store.backend.quads(None, OMS.envelope, None, OMS.blobs)
        }
        if envelopes
        else set()
    )
    indexed = _indexed(store)
    erased = dict(_tombstones(store)) if envelopes else {}
    for address in sorted(indexed | signed | erased.keys()):
        if address in erased:  # a tombstone: no grain, no other state
            yield address, tombstone_entry(erased[address])
            continue
        entry = manifest_entry(store, address) if address in indexed else {}
        if address in signed:
            node = ox.NamedNode(NIH_PREFIX + address)
            envelope = next(store.backend.quads(node, OMS.envelope, None, OMS.blobs))
            entry = {
                "oms_rdf:envelope": base64.b64decode(term_text(envelope.object)),
                **entry,
            }
        if entry:
            yield address, entry


def _tombstones(store: GrainStore) -> list[tuple[str, int]]:
    """Every erased grain's address and erasure time, in address order."""
    pairs = []
    for quad in store.backend.quads(None, OMS.erasedAt, None, OMS.index):
        node = term_text(quad.subject)
        if node.startswith(NIH_PREFIX):
            when: int = literal_value(quad.object)  # type: ignore[arg-type]
            pairs.append((node.removeprefix(NIH_PREFIX), when))
    return sorted(pairs)


def _indexed(store: GrainStore) -> set[str]:
    """The addresses of the grains held here that have index state."""
    subjects = (
        term_text(q.subject) for q in store.backend.quads(None, None, None, OMS.index)
    )
    erased = {
        term_text(q.subject)
        for q in store.backend.quads(None, OMS.erasedAt, None, OMS.index)
    }
    nodes = {s for s in subjects if s.startswith(NIH_PREFIX)} - erased
    return {node.removeprefix(NIH_PREFIX) for node in nodes}
