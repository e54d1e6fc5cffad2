"""The store's trust laws, checked on a store before and after one caller input.

1. only an ``OmsError`` escapes (the targets catch it; anything else is a bug);
2. a refused input leaves every quad of every graph as it was;
3. an accepted input leaves every grain's layer (its node's default-graph quads)
   equal to what :func:`~oms_rdf.rdf.mapping.grain_to_quads` makes from its blob;
4. the reserved graphs change only as the store's own operations change them:
   no blob quad goes, every new blob is a grain whose address is its node, no
   audit event changes or goes and the chain verifies, and index quads are added
   or removed only for grains (or evidence events) the operation's new audit
   events name.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass

import pyoxigraph as ox

import oms_rdf as oms
from oms_rdf.codec.grain import Grain
from oms_rdf.io.layer import stored_term
from oms_rdf.rdf.mapping import grain_to_quads
from oms_rdf.rdf.vocab import OMS
from oms_rdf.store.audit import check as check_audit

NIH = "nih:sha-256;"
DEFAULT = ox.DefaultGraph()
BLOBS, INDEX, AUDIT = OMS.blobs, OMS.index, OMS.audit
HEAD = OMS.auditHead.value


@dataclass(frozen=True)
class Snapshot:
    """Every quad of a store, as N-Quads lines, and the same split by graph."""

    lines: tuple[str, ...]
    quads: frozenset[ox.Quad]

    def graph(self, name: ox.NamedNode) -> frozenset[ox.Quad]:
        return frozenset(q for q in self.quads if q.graph_name == name)


def snapshot(store: oms.GrainStore) -> Snapshot:
    quads = list(store.core.backend.quads())
    return Snapshot(tuple(sorted(str(q) for q in quads)), frozenset(quads))


def refused(before: Snapshot, store: oms.GrainStore, what: str) -> None:
    """Law 2: a refused input wrote nothing, removed nothing."""
    after = snapshot(store)
    if after.lines != before.lines:
        gone = sorted(set(before.lines) - set(after.lines))[:5]
        new = sorted(set(after.lines) - set(before.lines))[:5]
        raise AssertionError(
            f"a refused {what} changed the store: removed {gone}, added {new}"
        )


def _layer(quads: Iterable[ox.Quad]) -> set[tuple[object, object, object]]:
    return {
        (q.subject, q.predicate, stored_term(q.object))
        for q in quads
        if q.graph_name == DEFAULT
    }


def _blob_grain(quad: ox.Quad) -> Grain:
    node, blob = quad.subject, quad.object
    assert isinstance(node, ox.NamedNode) and node.value.startswith(NIH), (
        f"a blob quad on {node} in oms:blobs, not on a grain node"
    )
    assert quad.predicate == OMS.blob, f"oms:blobs holds {quad}"
    assert isinstance(blob, ox.Literal), f"blob of {node} is {blob}"
    grain = Grain.from_blob(base64.b64decode(blob.value))
    assert NIH + grain.address == node.value, (
        f"the blob on {node.value} has address {grain.address}"
    )
    return grain


def whole(store: oms.GrainStore, what: str) -> None:
    """Laws 3 and 4 over a whole store, as if it had been made from nothing."""
    accepted(Snapshot((), frozenset()), store, what)


def accepted(before: Snapshot, store: oms.GrainStore, what: str) -> None:
    """Laws 3 and 4 on a store that took an input."""
    after = snapshot(store)
    # Law 4, blobs: none goes, every new one is a grain on its own node.
    blobs_before, blobs_after = before.graph(BLOBS), after.graph(BLOBS)
    lost = blobs_before - blobs_after
    assert not lost, f"{what} removed blob quads: {sorted(map(str, lost))[:3]}"
    blob_of = {q.subject: q for q in blobs_after}
    new_grains = set(blob_of) - {q.subject for q in blobs_before}
    for node in new_grains:
        _blob_grain(blob_of[node])
    # Law 3: each grain's layer is the mapping's, as Oxigraph keeps it. The layers
    # the input left alone were checked when they were written (the story store
    # is checked whole once): only new grains and nodes whose quads changed are.
    changed = {q.subject for q in before.quads ^ after.quads if q.graph_name == DEFAULT}
    by_node: dict[object, list[ox.Quad]] = {}
    for q in after.quads:
        if q.graph_name == DEFAULT and q.subject in changed | new_grains:
            by_node.setdefault(q.subject, []).append(q)
    for node in (changed | new_grains) & set(blob_of):
        grain = _blob_grain(blob_of[node])
        made = _layer(grain_to_quads(grain, store.settings))
        found = _layer(by_node.get(node, ()))
        assert found == made, (
            f"{what}: the layer of {node} is not its blob's mapping: "
            f"missing {sorted(map(str, made - found))[:3]}, "
            f"extra {sorted(map(str, found - made))[:3]}"
        )
    # Law 4, audit: no event changes or goes; the chain verifies.
    events_before = {q for q in before.graph(AUDIT) if q.predicate.value != HEAD}
    events_after = {q for q in after.graph(AUDIT) if q.predicate.value != HEAD}
    lost_events = events_before - events_after
    assert not lost_events, (
        f"{what} removed audit quads: {sorted(map(str, lost_events))[:3]}"
    )
    check_audit(store.core.backend)
    new_events = events_after - events_before
    named = {q.object for q in new_events if q.predicate in (OMS.target, OMS.result)}
    # An import or a SPARQL Update is one event that counts what it brought,
    # naming none of it; an update may also retract any grain it names a triple of.
    operations = {
        str(getattr(q.object, "value", ""))
        for q in new_events
        if q.predicate == OMS.operation
    }
    if operations & {"import", "update"}:
        named |= new_grains
    if "update" in operations:
        named |= set(blob_of)
    assert new_grains <= named, (
        f"{what} wrote grains no audit event names: {sorted(map(str, new_grains))[:3]}"
    )
    # Law 4, index: changed only for what the new audit events name.
    index_before, index_after = before.graph(INDEX), after.graph(INDEX)
    events = {
        q.subject
        for q in index_after
        if q.predicate == OMS.evidenceFor and q.object in named
    }
    allowed = named | events | {OMS.settings}
    for change, quads in (("removed", index_before - index_after),
                          ("added", index_after - index_before)):  # fmt: skip
        stray = [q for q in quads if q.subject not in allowed]
        assert not stray, (
            f"{what} {change} index quads no new audit event names: "
            f"{sorted(map(str, stray))[:3]}"
        )
