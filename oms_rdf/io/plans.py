"""Import plans, one per kind of source: check everything first, then yield the rows."""

from __future__ import annotations

import base64
import io as _io
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import IO, Any

import pyoxigraph as ox

from ..codec import check_address
from ..codec.grain import Grain
from ..codec.schema import BELIEF
from ..errors import DecodeError, ErrorCode, OmsError, SignatureError, StoreError
from ..rdf.mapping import (
    NIH_PREFIX,
    Row,
    address_of,
    grain_iri,
    millis_literal,
    nt_literal,
    rows_to_nquads,
)
from ..rdf.vocab import INDEX_PROPERTIES, OMS, RDF, XSD
from ..store import GrainStore
from ..store.erasure import erased_addresses
from ..store.journal import JOURNAL
from ..store.policy import is_protected
from ..store.presence import BATCH, stored_addresses
from ..store.writelock import WRITER
from .container import read_mg
from .evidence import EvidenceCheck, is_event_subject
from .jsonl import loads_json_grain
from .layer import LayerCheck
from .manifest import VERIFICATION_IN, VOIDED_KEY
from .records import ImportReport, Item, _text, fail_or_skip, row_of
from .sources import MAX_LINE, Counting, Progress, bounded_lines, line_of, parse_source

_P_SYSTEM_TO = str(OMS.systemTo)
_GRAIN_GRAPHS = frozenset({"", str(OMS.blobs), str(OMS.index)})
ONE_PASS_LIMIT = 250_000  # grains an import keeps from its first read
ONE_PASS_BYTES = 256 << 20  # and the most blob bytes it keeps
_BATCH_BYTES = 8 << 20  # blob bytes decoded at once while checking a container
XSD_DOUBLE = XSD.double.value


class TwoPassError(Exception):
    """A one-pass import met what only two passes handle exactly: the journal
    undoes what it wrote, and the import starts again in two passes."""


@contextmanager
def plan_jsonl(store: GrainStore, reopen: Callable[[], IO[bytes]], report: ImportReport,
                skip: bool, progress: Progress, *,
                at_once: bool = False) -> Iterator[Callable[[], Iterator[Item]]]:  # fmt: skip
    """Check every line, then write the new grains in a second pass.

    ``at_once``: check and write in one pass, for a store that holds no grain, where
    the journal undoes a refusal found at the end in one cheap step. Rows are then
    written as they are read; a grain on two lines raises :class:`TwoPassError`.
    """
    bad: set[int] = set()
    fresh: set[str] = set()
    states: dict[str, list[Row]] = {}  # index state carried by the lines ("$index")
    signatures: dict[str, Any] = {}  # envelopes of signed grains ("$envelope")

    # The first pass's grains, while they fit in memory (one pass keeps none).
    kept: list[Grain] | None = None if at_once else []
    kept_bytes = 0

    def grains(check: bool) -> Iterator[Grain]:
        nonlocal kept, kept_bytes
        if not check and kept is not None:
            yield from kept  # one pass was enough
            return
        with reopen() as raw:
            stream = _io.BufferedReader(Counting(raw, progress if check else None))
            for number, data in enumerate(
                bounded_lines(stream), 1
            ):  # a bad line is named
                if not data.strip() or number in bad:
                    continue
                try:
                    if len(data) > MAX_LINE:
                        raise DecodeError(
                            f"a line of JSON Lines holds one grain, at most "
                            f"{MAX_LINE} bytes; this one is longer",
                            code=ErrorCode.RANGE,
                        )
                    fields, entry = loads_json_grain(_utf8(data))
                    grain, signature = store.accept(fields)
                    if signature is not None:
                        signatures[grain.address] = signature
                    if check and entry is not None:
                        states[grain.address] = _state_from_manifest(
                            grain.address, entry
                        )
                except OmsError as exc:
                    bad.add(number)
                    fail_or_skip(report, skip, f"line {number}", exc)
                    continue
                if check and kept is not None:
                    kept_bytes += len(grain.blob)
                    full = len(kept) >= ONE_PASS_LIMIT or kept_bytes > ONE_PASS_BYTES
                    kept = None if full else kept
                    if kept is not None:
                        kept.append(grain)
                yield grain

    def rows_of(grain: Grain) -> Iterator[Row]:
        state = states.get(grain.address, ())
        signature = signatures.get(grain.address)
        yield from _knowing(store.rows_for(grain, signature), _closes(state))
        yield from state

    policies = Policies(store)
    known = _Known(store, report)
    if at_once:

        def as_read() -> Iterator[Row]:
            for grain in known.new(grains(check=True)):
                if grain.address in fresh:
                    raise TwoPassError(f"grain {grain.address[:12]}… is on two lines")
                fresh.add(grain.address)
                policies.see(grain)
                yield from rows_of(grain)
            for grain, exc in policies.refused(lambda a: _closes(states.get(a, ()))):
                fail_or_skip(report, skip, f"grain {grain.address[:12]}…", exc)
            report.added = len(fresh)

        yield as_read
        return
    for grain in known.new(grains(check=True)):
        if grain.address not in fresh:
            fresh.add(grain.address)
            policies.see(grain)
    for address, state in states.items():
        if address not in fresh and address not in known.tombstones:
            _check_same_state(store, address, state)
    for grain, exc in policies.refused(lambda a: _closes(states.get(a, ()))):
        fresh.discard(grain.address)
        fail_or_skip(report, skip, f"grain {grain.address[:12]}…", exc)
    report.added = len(fresh)

    def rows() -> Iterator[Row]:
        for grain in _unique(grains(check=False), fresh):
            yield from rows_of(grain)

    yield rows


class Policies:
    """What ``put`` checks of each new grain, checked of an import's new grains.

    A grain whose ``derived_from`` names a current protected belief with the
    same claim is a supersession in disguise (``GrainStore.check_new``). The
    parent may be stored, or new in the same import and current after it; only
    protected new beliefs and new grains with parents are kept for the check.
    """

    def __init__(self, store: GrainStore) -> None:
        self.store, self.now = store, store.clock()
        self.protected: dict[str, Grain] = {}
        self.children: list[Grain] = []

    def see(self, grain: Grain) -> None:
        if grain.type_byte != BELIEF.byte:
            return
        if is_protected(grain.get("invalidation_policy"), self.now):
            self.protected[grain.address] = grain
        if grain.get("derived_from"):
            self.children.append(grain)

    def refused(
        self, closed: Callable[[str], bool]
    ) -> Iterator[tuple[Grain, OmsError]]:
        """The new grains put would refuse, each with its error; ``closed`` tells
        the new grains the import brings in already superseded or retracted."""
        current = {a: g for a, g in self.protected.items() if not closed(a)}
        for grain in self.children:
            try:
                self.store.check_new(grain, current)
            except OmsError as exc:
                yield grain, exc


def _knowing(rows: list[Row], closed: bool) -> list[Row]:
    """A new grain's rows, without its knowledge triple when its state closes it:
    then the rows are the knowledge as the store would rebuild it."""
    if not closed:
        return rows
    return [row for row in rows if row[3] in _GRAIN_GRAPHS]


def _closes(state: Sequence[Row]) -> bool:
    """Whether the index rows an import brings close a grain (oms:systemTo)."""
    return any(r[1] == _P_SYSTEM_TO for r in state)


class _Known:
    """Which of a source's grains are new here: neither stored nor erased.

    The store's tombstones are read once; stored grains are asked a batch at a
    time (one query per batch over a server). An erased grain is skipped, and the
    import says so.
    """

    def __init__(self, store: GrainStore, report: ImportReport) -> None:
        self.store, self.report = store, report
        self.tombstones = erased_addresses(store.backend)

    def erased(self, address: str) -> bool:
        """Whether a grain was erased here; then the import reports it skipped."""
        if address not in self.tombstones:
            return False
        where = f"grain {address[:12]}…"
        if (where, "erased, skipped") not in self.report.skipped:
            self.report.skipped.append((where, "erased, skipped"))
        return True

    def new(self, grains: Iterable[Grain]) -> Iterator[Grain]:
        """The grains that are new here, in their order."""
        batch: list[Grain] = []
        for grain in grains:
            batch.append(grain)
            if len(batch) == BATCH:
                yield from self._new(batch)
                batch = []
        yield from self._new(batch)

    def _new(self, batch: list[Grain]) -> Iterator[Grain]:
        held = stored_addresses(self.store.backend, {g.address for g in batch})
        for grain in batch:
            if grain.address not in held and not self.erased(grain.address):
                yield grain


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(
            f"not UTF-8: byte {data[exc.start]:#04x} at column {exc.start + 1}"
        ) from None


def _unique(grains: Iterator[Grain], fresh: set[str]) -> Iterator[Grain]:
    seen: set[str] = set()
    for grain in grains:
        if grain.address in fresh and grain.address not in seen:
            seen.add(grain.address)
            yield grain


@contextmanager
def plan_mg(store: GrainStore, reopen: Callable[[], IO[bytes]], report: ImportReport,
             skip: bool, progress: Progress) -> Iterator[Callable[[], Iterator[Item]]]:  # fmt: skip
    plan = _MgPlan(store, report, skip)
    with reopen() as raw:
        plan.read(read_mg(raw, progress=progress).items())
    report.added = len(plan.fresh)

    def rows() -> Iterator[Row]:
        items = plan.kept if plan.kept is not None else _reread(reopen)
        written: set[str] = set()  # a container may hold a grain twice
        for item in items:
            if isinstance(item, Grain):
                if item.address in plan.fresh and item.address not in written:
                    written.add(item.address)
                    signature = plan.signatures.get(item.address)
                    yield from _knowing(store.rows_for(item, signature),
                                        item.address in plan.closed)  # fmt: skip
            elif item[0] in plan.fresh:
                yield from _state_from_manifest(*item)

    yield rows


def _reread(
    reopen: Callable[[], IO[bytes]],
) -> Iterator[Grain | tuple[str, dict[str, Any]]]:
    with reopen() as raw:
        for item in read_mg(raw).items():
            yield Grain.from_blob(item) if isinstance(item, bytes) else item


class _MgPlan:
    """What an ``.mg`` import adds, decided in one read of the container.

    Its grains come first, then its manifest, an entry at a time. The new grains
    and their entries are kept for writing while they are at most
    ``ONE_PASS_LIMIT``; past that, only sets of addresses are kept, and the rows
    are made again from a second read.
    """

    def __init__(self, store: GrainStore, report: ImportReport, skip: bool) -> None:
        self.store, self.report, self.skip = store, report, skip
        self.fresh: set[str] = set()  # the new grains, to be added
        self.contained: set[str] = set()  # every grain the container holds
        self.flagged: set[str] = set()  # new grains whose signed flag is set
        self.closed: set[str] = set()  # new grains their entry closes
        self.entries: set[str] = set()  # addresses the manifest names
        self.signatures: dict[str, Any] = {}
        # What the rows are made from, in the container's order, while it fits.
        self.kept: list[Grain | tuple[str, dict[str, Any]]] | None = []
        self.kept_bytes = 0  # of the blobs kept
        self.policies = Policies(store)
        self.known = _Known(store, report)

    def read(self, items: Iterator[bytes | tuple[str, dict[str, Any]]]) -> None:
        batch: list[Grain] = []
        size = 0  # of the batch's blobs: a batch of large grains is cut short
        for item in items:
            if isinstance(item, bytes):
                batch.append(Grain.from_blob(item))
                size += len(item)
                if len(batch) == BATCH or size > _BATCH_BYTES:
                    self._grains(batch)
                    batch, size = [], 0
            else:
                self._grains(batch)  # every grain is seen before the first entry
                batch = []
                self._entry(*item)
        self._grains(batch)
        for address in sorted(self.flagged - self.entries):
            self._refuse(address, _unsigned())
        for grain, error in self.policies.refused(self.closed.__contains__):
            self._refuse(grain.address, error)

    def _grains(self, batch: list[Grain]) -> None:
        self.contained.update(g.address for g in batch)
        for grain in self.known.new(batch):
            if grain.address in self.fresh:
                continue  # the same grain again: kept and checked once
            self.fresh.add(grain.address)
            self.policies.see(grain)
            if grain.signed:
                self.flagged.add(grain.address)
            self._keep(grain)

    def _entry(self, address: str, entry: dict[str, Any]) -> None:
        if address in self.entries:
            raise DecodeError(f"the manifest names {address[:12]}… twice",
                              path=f"manifest {address[:12]}…")  # fmt: skip
        self.entries.add(address)
        state = _state_from_manifest(address, entry)
        if address in self.flagged:
            # A signed grain travels with its envelope; verified here as put does.
            try:
                self.signatures[address] = _envelope(self.store, address, entry)
            except OmsError as exc:
                self._refuse(address, exc)
        if address in self.fresh:
            if _closes(state):
                self.closed.add(address)
            self._keep((address, entry))
        elif address in self.store:
            _check_same_state(self.store, address, state)
        elif address not in self.contained:
            fail_or_skip(self.report, self.skip, f"manifest {address[:12]}…",
                          DecodeError("the manifest names a grain the container does not hold"))  # fmt: skip

    def _keep(self, item: Grain | tuple[str, dict[str, Any]]) -> None:
        if self.kept is None:
            return
        if isinstance(item, Grain):
            self.kept_bytes += len(item.blob)
        if len(self.kept) >= ONE_PASS_LIMIT or self.kept_bytes > ONE_PASS_BYTES:
            self.kept = None  # past what one read may hold: read again to write
        else:
            self.kept.append(item)

    def _refuse(self, address: str, error: OmsError) -> None:
        self.fresh.discard(address)
        fail_or_skip(self.report, self.skip, f"grain {address[:12]}…", error)


def _unsigned() -> SignatureError:
    return SignatureError(
        "the grain's signed flag (header bit 0) is set but the manifest holds no "
        "COSE_Sign1 envelope for it (oms_rdf:envelope)",
        code=ErrorCode.SIGNED_MISMATCH,
    )


def _envelope(store: GrainStore, address: str, entry: Mapping[str, Any]) -> Any:
    """The verified signature of a signed grain, from its manifest entry."""
    envelope = entry.get("oms_rdf:envelope")
    if not isinstance(envelope, bytes):
        raise _unsigned()
    signed, signature = store.accept(envelope)
    if signed.address != address:
        raise SignatureError(
            f"the envelope in the manifest signs {signed.address[:12]}…",
            code=ErrorCode.SIGNATURE,
        )
    return signature


def _state_from_manifest(address: str, entry: Mapping[str, Any]) -> list[Row]:
    """Index rows for one manifest entry (status and verification replace the defaults)."""
    node = f"<{NIH_PREFIX}{address}>"
    idx = str(OMS.index)
    rows: list[Row] = []
    vstatus = entry.get("vstatus")
    status = (
        "retracted"
        if vstatus == "retracted"
        else ("superseded" if "sb" in entry else "active")
    )
    verification = VERIFICATION_IN.get(str(vstatus), "unverified") if vstatus != "retracted" else (
        "contradicted" if entry.get("oms_rdf:contradicted") else "unverified")  # fmt: skip
    # Active and unverified are the absence of index rows (as the store writes them).
    if status != "active":
        rows.append((node, str(OMS.status), str(getattr(OMS, status)), idx))
    if verification != "unverified":
        rows.append(
            (node, str(OMS.verificationStatus), str(getattr(OMS, verification)), idx)
        )
    if "sb" in entry:
        successor = entry["sb"]
        if not isinstance(successor, str):
            raise DecodeError(
                f"sb of {address[:12]}… must be an address, not {successor!r}"
            )
        check_address(successor)  # never text pasted into N-Quads unchecked
        rows.append((node, str(OMS.supersededBy), f"<{NIH_PREFIX}{successor}>", idx))
    for key, prop in (("svt", OMS.systemTo), (VOIDED_KEY, OMS.voidedAt)):
        if isinstance(entry.get(key), int):
            rows.append((node, str(prop), str(millis_literal(entry[key])), idx))
    for key, prop in (("itype", OMS.invalidationType), ("ireason", OMS.invalidationReason),
                      ("iinit", OMS.invalidationInitiator)):  # fmt: skip
        if isinstance(entry.get(key), str):
            rows.append((node, str(prop), nt_literal(entry[key]), idx))
    return rows + _evidence_rows(address, entry)


def _evidence_rows(address: str, entry: Mapping[str, Any]) -> list[Row]:
    """Index rows for the local ``oms_rdf:`` fields an export adds (see export.py).

    Each value is checked for its type and written as a typed term, never pasted.
    """
    node, idx = grain_iri(address), OMS.index
    quads: list[ox.Quad] = []

    def field(key: str, kinds: type | tuple[type, ...]) -> Any:
        value = entry.get(key)
        if value is not None and (
            not isinstance(value, kinds) or isinstance(value, bool)
        ):
            raise DecodeError(f"{key} of {address[:12]}… must be {kinds}, not {value!r}",
                              path=f"manifest {address[:12]}… {key}")  # fmt: skip
        return value

    for key, prop in (
        ("oms_rdf:lr", OMS.logRatio),
        ("oms_rdf:ec", OMS.effectiveConfidence),
    ):
        if (value := field(key, (int, float))) is not None:
            quads.append(ox.Quad(node, prop, _double(value), idx))
    if (status := field("oms_rdf:sprt", str)) is not None:
        quads.append(
            ox.Quad(node, OMS.sprtStatus, ox.Literal(_one_of(status, _SPRT)), idx)
        )
    for status in field("oms_rdf:entered", list) or ():
        quads.append(
            ox.Quad(node, OMS.sprtEntered, ox.Literal(_one_of(status, _SPRT)), idx)
        )
    for rival in field("oms_rdf:conflicts", list) or ():
        rival = check_address(rival if isinstance(rival, str) else repr(rival))
        quads.append(ox.Quad(node, OMS.conflictsWith, grain_iri(rival), idx))
    if (marked := field("oms_rdf:pe", int)) is not None:
        quads.append(ox.Quad(node, OMS.pendingErasure, millis_literal(marked), idx))
    for event in field("oms_rdf:evidence", list) or ():
        quads += _evidence_event(node, event, address)
    return [row_of(q) for q in quads]


_SPRT = ("accumulating", "promoted", "demoted")
_EVIDENCE_KINDS = ("supporting", "refuting")


def _one_of(value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise DecodeError(f"expected one of {list(allowed)}, found {value!r}")
    return str(value)


def _double(value: float) -> ox.Literal:
    return ox.Literal(repr(float(value)), datatype=ox.NamedNode(XSD_DOUBLE))


def _evidence_event(node: ox.NamedNode, event: Any, address: str) -> list[ox.Quad]:
    """The quads of one recorded observation, from its manifest map."""
    where = f"manifest {address[:12]}… oms_rdf:evidence"
    if not isinstance(event, Mapping) or not isinstance(event.get("id"), str):
        raise DecodeError("an evidence event must be a map with an id", path=where)
    try:
        iri = f"urn:uuid:{uuid.UUID(event['id'].removeprefix('urn:uuid:'))}"
        kind = _one_of(event.get("kind"), _EVIDENCE_KINDS)
        strength, at = float(event["strength"]), int(event["at"])
        log_ratio = float(event["lr"])
    except (KeyError, TypeError, ValueError, OmsError) as exc:
        raise DecodeError(f"a malformed evidence event: {exc}", path=where) from None
    subject, idx = ox.NamedNode(iri), OMS.index
    quads = [
        ox.Quad(subject, RDF.type, OMS.Evidence, idx),
        ox.Quad(subject, OMS.evidenceFor, node, idx),
        ox.Quad(subject, OMS.evidenceKind, ox.Literal(kind), idx),
        ox.Quad(subject, OMS.strength, _double(strength), idx),
        ox.Quad(subject, OMS.at, millis_literal(at), idx),
        ox.Quad(subject, OMS.logRatio, _double(log_ratio), idx),
    ]
    for key, prop in (("note", OMS.note), ("by", OMS.actor)):
        if isinstance(event.get(key), str):
            quads.append(ox.Quad(subject, prop, ox.Literal(event[key]), idx))
    return quads


class SourceSettings:
    """The mapping settings an RDF export was made with (node ``oms:settings``).

    Its grain layer was mapped with them; a store with other settings would map
    the same grains to other terms, so it refuses the source.
    """

    def __init__(self) -> None:
        self.bases: set[str] = set()
        self.relations: set[str] = set()
        self.seen = False  # a source without the node (hand-made) carries none

    def see(self, quad: ox.Quad) -> None:
        """Take one quad of the settings node."""
        if quad.predicate == OMS.baseIri:
            self.seen = True
            self.bases.add(_text(quad.object))
        elif quad.predicate == OMS.entityRelation:
            self.relations.add(_text(quad.object))

    def check(self, store: GrainStore) -> None:
        """Refuse settings other than ``store``'s (ERR_CONFLICT)."""
        if not self.seen:
            return
        mine = store.settings
        if self.bases != {mine.base_iri}:
            raise StoreError(
                f"the source was made with base IRI {', '.join(sorted(self.bases))}, "
                f"this store uses {mine.base_iri!r}; entity IRIs would not match",
                code=ErrorCode.CONFLICT,
            )
        if self.relations != mine.entity_relations:
            raise StoreError(
                f"the source was made with entity relations {sorted(self.relations)}, "
                f"this store with {sorted(mine.entity_relations)}; open the store "
                "with the source's (entity_relations=...) to restore it",
                code=ErrorCode.CONFLICT,
            )


def _check_same_state(store: GrainStore, address: str, rows: list[Row]) -> None:
    # Compare as stored: Oxigraph keeps literals in canonical form ("…00Z", not
    # "…00.000Z"), so both sides go through a store before comparing.
    given = ox.Store()
    node = f"<{NIH_PREFIX}{address}>"  # the grain's own rows; events are other nodes
    own = [row for row in rows if row[0] == node]
    given.load(rows_to_nquads(own).encode(), format=ox.RdfFormat.N_QUADS)
    # The signer is read from the envelope, which the grain's bytes pin down.
    have = {
        str(q)
        for q in store.backend.quads(grain_iri(address), None, None, OMS.index)
        if q.predicate != OMS.signedBy
    }
    if {str(q) for q in given if q.predicate != OMS.signedBy} != have:
        raise StoreError(
            f"grain {address[:12]}… is already in the store with another index state; "
            "importing would change its history",
            code=ErrorCode.CONFLICT,
            path=address,
        )


_BLOB_PROPERTIES = frozenset({OMS.blob, OMS.envelope})
_INDEX_PROPERTIES = frozenset(getattr(OMS, name) for name in INDEX_PROPERTIES)


def _regraph(quad: ox.Quad) -> ox.Quad:
    """Put a quad of a flattened grain layer back in its graph, by its property."""
    s, p = quad.subject, quad.predicate
    if isinstance(s, ox.NamedNode) and s.value.startswith(NIH_PREFIX):
        if p in _BLOB_PROPERTIES:
            graph: Any = OMS.blobs
        elif p in _INDEX_PROPERTIES:
            graph = OMS.index
        else:
            return quad
    else:
        graph = OMS.index  # the settings node and evidence events
    return ox.Quad(s, p, quad.object, graph)


def holds_blank(quad: ox.Quad) -> bool:
    """Whether a quad's subject or object is a blank node."""
    return isinstance(quad.subject, ox.BlankNode) or isinstance(
        quad.object, ox.BlankNode
    )


def _quads(raw: IO[bytes], fmt: ox.RdfFormat, progress: Progress) -> Iterator[ox.Quad]:
    quads = parse_source(raw, fmt, None, progress)
    return quads if fmt.supports_datasets else map(_regraph, quads)


@contextmanager
def plan_dataset(store: GrainStore, reopen: Callable[[], IO[bytes]], fmt: ox.RdfFormat, report: ImportReport,
                  skip: bool, progress: Progress) -> Iterator[Callable[[], Iterator[Item]]]:  # fmt: skip
    known: dict[str, bool] = {}  # grain node -> already in the store
    with_blob: set[str] = set()
    bad: set[str] = set()
    existing_index: dict[str, set[Row]] = {}
    indexed: dict[str, ox.Quad] = {}  # grain node -> one of its index quads
    index_graph, blob_graph = OMS.index, OMS.blobs
    settings = SourceSettings()
    described: set[str] = set()
    present: set[str] = set()  # quads not about a grain that the store already has
    closed: set[str] = set()  # grain nodes the source closes (oms:systemTo)
    policies = Policies(store)
    erasures = _Known(store, report)
    layer = LayerCheck(store.settings)
    evidence = EvidenceCheck()
    ours = (ox.DefaultGraph(), OMS.blobs, OMS.index, OMS.audit)

    def refuse(quad: ox.Quad, why: str) -> None:
        raise StoreError(
            f"{why}: {quad}; only an oms_rdf export whose grains verify may write the "
            "store's reserved graphs",
            code=ErrorCode.CONFLICT,
            path=line_of(reopen, quad),
        )

    with reopen() as raw:
        for quad in _quads(raw, fmt, progress):
            s, graph = quad.subject, quad.graph_name
            if graph in ours and holds_blank(quad):
                refuse(quad, "a blank node in the store's own graphs, where the "
                             "store never writes one")  # fmt: skip
            if isinstance(s, ox.NamedNode) and s.value.startswith(NIH_PREFIX):
                node = s.value
                if node not in known:
                    known[node] = address_of(s) in store
                    if erasures.erased(address_of(s)):
                        bad.add(node)  # skipped, reported, never written
                if graph == blob_graph and quad.predicate not in _BLOB_PROPERTIES:
                    refuse(quad, "the blobs graph holds only blobs and envelopes")
                if graph == blob_graph and quad.predicate == OMS.blob:
                    if node in with_blob:
                        refuse(quad, "a grain with two blobs")
                    with_blob.add(node)
                    try:
                        grain = Grain.from_blob(
                            base64.b64decode(_text(quad.object)), address=address_of(s)
                        )
                        if not known[node]:
                            policies.see(grain)
                            layer.grain(grain)
                    except (OmsError, ValueError) as exc:
                        bad.add(node)
                        err = (
                            exc if isinstance(exc, OmsError) else DecodeError(str(exc))
                        )
                        fail_or_skip(report, skip, f"grain {address_of(s)[:12]}…", err)
                elif graph == index_graph:
                    if quad.predicate != OMS.erasedAt:  # a tombstone needs no grain
                        indexed.setdefault(node, quad)
                    if quad.predicate == OMS.systemTo:
                        closed.add(node)
                    if known[node] and quad.predicate != OMS.erasedAt:
                        existing_index.setdefault(node, set()).add(row_of(quad))
                elif isinstance(graph, ox.DefaultGraph):
                    described.add(node)
                    layer.see(quad)
                elif graph == OMS.audit:
                    refuse(quad, "the audit log describes operations, not grains")
            elif s == JOURNAL:
                refuse(quad, "the journal belongs to a write in progress in this store")
            elif s == OMS.settings and graph == index_graph:
                settings.see(quad)
            elif isinstance(graph, ox.DefaultGraph) or graph == blob_graph:
                refuse(quad, "the grain layer and the blobs hold only grain nodes")
            elif graph == index_graph or graph == OMS.audit:
                if graph == index_graph and is_event_subject(s):
                    evidence.see(quad)
                if next(
                    store.backend.quads(s, quad.predicate, quad.object, graph), None
                ):
                    present.add(str(quad))  # decided once, before anything is written
            # Knowledge (oms:current and adopted graphs) is rebuilt from the grains.
    settings.check(store)
    for node in described - with_blob:
        if known[node]:
            continue  # stored already: its quads in the source are not written
        fail_or_skip(report, skip, f"grain {address_of(ox.NamedNode(node))[:12]}…",
                      DecodeError("a grain node without its blob in graph oms:blobs"))  # fmt: skip
        bad.add(node)
    for differing in layer.differing():
        node = str(differing)[1:-1]
        if node not in bad:
            bad.add(node)
            fail_or_skip(report, skip, f"grain {address_of(ox.NamedNode(node))[:12]}…",
                          DecodeError("its grain layer (default graph) is not what the "
                                      "mapping makes of its blob with this store's "
                                      "settings"))  # fmt: skip
    for node, quad in indexed.items():
        if node not in with_blob and not known[node]:
            refuse(quad, "index state for a grain neither in the source nor the store")
    for grain, error in policies.refused(lambda a: f"{NIH_PREFIX}{a}" in closed):
        bad.add(f"{NIH_PREFIX}{grain.address}")
        fail_or_skip(report, skip, f"grain {grain.address[:12]}…", error)
    for quad, why in evidence.refusals(
        lambda n: str(n)[1:-1] in with_blob and not known[str(n)[1:-1]],
        lambda q: str(q) in present,
        lambda n: str(n)[1:-1] in bad,
    ):
        refuse(quad, why)
    for node, state in existing_index.items():
        if node not in bad:
            _check_same_state(store, address_of(ox.NamedNode(node)), list(state))
    report.added = sum(
        1 for n, pre in known.items() if not pre and n not in bad and n in with_blob
    )

    def rows() -> Iterator[Item]:
        with reopen() as raw:
            for quad in _quads(raw, fmt, None):
                s = quad.subject
                if quad.graph_name not in ours or isinstance(quad.object, ox.Triple):
                    continue  # knowledge is rebuilt; RDF 1.2 reifiers are views
                if isinstance(s, ox.NamedNode) and s.value.startswith(NIH_PREFIX):
                    if known.get(s.value) or s.value in bad:
                        continue
                elif s == OMS.settings or s == WRITER or str(quad) in present:
                    continue  # there before the import: never written, never removed
                elif s in evidence.dropped:
                    continue  # the evidence of a grain left out
                yield quad

    yield rows
