"""Which evidence events of an RDF export may be restored.

An export keeps each observation of :meth:`GrainStore.evidence` as an event node
in ``oms:index``; the grain's sequential test is computed from them. An import
writes an event only when it is whole (every property the store writes, each once,
nothing else) and belongs to a grain the same import brings in. Evidence for a
grain already stored goes through :meth:`GrainStore.evidence`, which checks the
grain's policy: a locked grain takes none.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator

import pyoxigraph as ox

from ..rdf.mapping import NIH_PREFIX
from ..rdf.vocab import OMS, RDF, XSD

__all__ = ["EvidenceCheck", "is_event_subject"]

_ONE_EACH = {
    RDF.type: lambda o: o == OMS.Evidence,
    OMS.evidenceFor: lambda o: (
        isinstance(o, ox.NamedNode) and o.value.startswith(NIH_PREFIX)
    ),
    OMS.evidenceKind: lambda o: (
        isinstance(o, ox.Literal) and o.value in ("supporting", "refuting")
    ),
    OMS.strength: lambda o: isinstance(o, ox.Literal) and o.datatype == XSD.double,
    OMS.at: lambda o: isinstance(o, ox.Literal) and o.datatype == XSD.dateTime,
    OMS.logRatio: lambda o: isinstance(o, ox.Literal) and o.datatype == XSD.double,
}
_OPTIONAL = {
    OMS.note: lambda o: isinstance(o, ox.Literal),
    OMS.actor: lambda o: isinstance(o, ox.Literal),
}
_STORE_NODES = frozenset({OMS.settings, OMS.journal, OMS.writer})


def is_event_subject(subject: object) -> bool:
    """Whether a subject of ``oms:index`` can only be an evidence event's node."""
    if subject in _STORE_NODES:
        return False
    return not (
        isinstance(subject, ox.NamedNode) and subject.value.startswith(NIH_PREFIX)
    )


class EvidenceCheck:
    """Feed it the source's event quads with :meth:`see`; then :meth:`refusals`."""

    def __init__(self) -> None:
        self.events: defaultdict[object, list[ox.Quad]] = defaultdict(list)
        self.dropped: set[object] = set()  # events of grains the import leaves out

    def see(self, quad: ox.Quad) -> None:
        """Take a quad of ``oms:index`` whose subject :func:`is_event_subject`."""
        self.events[quad.subject].append(quad)

    def refusals(
        self,
        restored: Callable[[object], bool],
        present: Callable[[ox.Quad], bool],
        skipped: Callable[[object], bool],
    ) -> Iterator[tuple[ox.Quad, str]]:
        """Each event the import must refuse, as one of its quads and why.

        ``restored(node)``: whether the import brings that grain in;
        ``present(quad)``: whether the store holds that quad already (an event
        the store has is not written again); ``skipped(node)``: whether the
        import leaves that grain out (erased here, or skipped as invalid): its
        events are left out with it, in :attr:`dropped`.
        """
        self.dropped.clear()
        for subject, quads in self.events.items():
            if all(present(q) for q in quads):
                continue
            why = _malformed(quads)
            if why is not None:
                yield quads[0], why
                continue
            target = next(q.object for q in quads if q.predicate == OMS.evidenceFor)
            if skipped(target):
                self.dropped.add(subject)
            elif not restored(target):
                yield (
                    quads[0],
                    (
                        f"evidence for {target}, which this import does not bring in; "
                        "record evidence for a stored grain with GrainStore.evidence(), "
                        "which checks its policy"
                    ),
                )


def _malformed(quads: list[ox.Quad]) -> str | None:
    seen: defaultdict[object, int] = defaultdict(int)
    for quad in quads:
        valid = _ONE_EACH.get(quad.predicate) or _OPTIONAL.get(quad.predicate)
        if valid is None:
            return f"an evidence event has no property {quad.predicate}"
        if not valid(quad.object):
            return f"an evidence event's {quad.predicate} cannot be {quad.object}"
        seen[quad.predicate] += 1
    missing = [str(p) for p in _ONE_EACH if seen[p] != 1]
    if missing or any(seen[p] > 1 for p in _OPTIONAL):
        return (
            "an evidence event needs each of "
            f"{', '.join(str(p) for p in _ONE_EACH)} once; "
            f"wrong: {', '.join(missing) or 'an optional property given twice'}"
        )
    return None
