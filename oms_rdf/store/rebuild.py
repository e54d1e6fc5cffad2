"""Whether a dataset's knowledge is already what the knowledge rebuild would make.

A whole-store restore loads an export's knowledge (``oms:current`` and the
beliefs' own graphs) together with its grains. Rebuilding it takes a third of the
restore, and for an export of ours it changes nothing; :class:`KnowledgeCheck`
reads the same quads as they stream past and tells whether the rebuild may be
skipped. Its rules are those of ``queries/rebuild_current.rq``, which stays the
one definition; ``tests/test_rebuild.py`` holds the two equal on random datasets.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import product

import pyoxigraph as ox

from ..rdf.vocab import OMS, RDF

_DEFAULT = ox.DefaultGraph()
# Graphs the rebuild never clears or fills, whatever a grain layer names.
_NEVER = frozenset({OMS.blobs, OMS.index, OMS.audit, OMS.grains})
_PARTS: dict[object, int] = {RDF.subject: 0, RDF.predicate: 1, RDF.object: 2}


class KnowledgeCheck:
    """Feed it every quad of a dataset with :meth:`see`; then :meth:`as_rebuilt`."""

    def __init__(self) -> None:
        # grain node -> its rdf:subject, rdf:predicate and rdf:object values
        self.parts: dict[object, tuple[list[object], ...]] = {}
        self.named: defaultdict[object, list[object]] = defaultdict(list)  # oms:graph
        self.closed: set[object] = set()  # nodes with oms:systemTo in oms:index
        self.held: defaultdict[object, set[ox.Quad]] = defaultdict(set)  # by graph

    def see(self, quad: ox.Quad) -> None:
        """Take any quad of the dataset."""
        graph = quad.graph_name
        if graph == _DEFAULT:
            self.describes(quad.subject, quad.predicate, quad.object)
        elif graph == OMS.index:
            self.indexes(quad.subject, quad.predicate)
        elif graph not in (OMS.blobs, OMS.audit):
            self.holds(quad)

    # What see() does by graph, for a reader that has sorted the quads already.

    def describes(self, subject: object, predicate: object, value: object) -> None:
        """Take a quad of the grain layer (the default graph)."""
        part = _PARTS.get(predicate)
        if part is not None:
            self.parts.setdefault(subject, ([], [], []))[part].append(value)
        elif predicate == OMS.graph:
            self.named[subject].append(value)

    def indexes(self, subject: object, predicate: object) -> None:
        """Take a quad of the index (graph ``oms:index``)."""
        if predicate == OMS.systemTo:
            self.closed.add(subject)

    def holds(self, quad: ox.Quad) -> None:
        """Take a quad of a graph other than the default, index, blobs and audit."""
        self.held[quad.graph_name].add(quad)

    @property
    def graphs(self) -> set[object]:
        """The knowledge graphs: ``oms:current`` and every graph a belief names."""
        named = (g for names in self.named.values() for g in names)
        return {OMS.current, *named} - _NEVER

    def as_rebuilt(self) -> bool:
        """Whether each knowledge graph holds exactly what the rebuild puts in it."""
        made: set[ox.Quad] = set()
        for node, (subjects, predicates, objects) in self.parts.items():
            if node in self.closed:
                continue
            for graph in self.named.get(node) or (OMS.current,):
                if graph in _NEVER:
                    continue
                for s, p, o in product(subjects, predicates, objects):
                    try:
                        made.add(ox.Quad(s, p, o, graph))  # type: ignore[arg-type]
                    except TypeError:
                        continue  # not a quad: an update's template skips it too
        held = set().union(*(self.held.get(g, ()) for g in self.graphs))
        return made == held
