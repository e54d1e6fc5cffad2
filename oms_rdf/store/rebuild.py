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

from ..vocab import OMS, RDF

_DEFAULT = ox.DefaultGraph()
_PARTS = {RDF.subject: 0, RDF.predicate: 1, RDF.object: 2}


class KnowledgeCheck:
    """Feed it every quad of a dataset with :meth:`see`; then :meth:`as_rebuilt`."""

    def __init__(self) -> None:
        # grain node -> its rdf:subject, rdf:predicate and rdf:object values
        self.parts: dict[object, tuple[list[object], ...]] = {}
        self.named: defaultdict[object, list[object]] = defaultdict(list)  # oms:graph
        self.closed: set[object] = set()  # nodes with oms:systemTo in oms:index
        self.held: defaultdict[object, set[ox.Quad]] = defaultdict(set)  # by graph

    def see(self, quad: ox.Quad) -> None:
        graph, predicate = quad.graph_name, quad.predicate
        if graph == _DEFAULT:
            part = _PARTS.get(predicate)
            if part is not None:
                values = self.parts.setdefault(quad.subject, ([], [], []))
                values[part].append(quad.object)
            elif predicate == OMS.graph:
                self.named[quad.subject].append(quad.object)
        elif graph == OMS.index:
            if predicate == OMS.systemTo:
                self.closed.add(quad.subject)
        elif graph not in (OMS.blobs, OMS.audit):
            self.held[graph].add(quad)

    @property
    def graphs(self) -> set[object]:
        """The knowledge graphs: ``oms:current`` and every graph a belief names."""
        return {OMS.current, *(g for names in self.named.values() for g in names)}

    def as_rebuilt(self) -> bool:
        """Whether each knowledge graph holds exactly what the rebuild puts in it."""
        made: set[ox.Quad] = set()
        for node, (subjects, predicates, objects) in self.parts.items():
            if node in self.closed:
                continue
            for graph in self.named.get(node) or (OMS.current,):
                for s, p, o in product(subjects, predicates, objects):
                    try:
                        made.add(ox.Quad(s, p, o, graph))  # type: ignore[arg-type]
                    except TypeError:
                        continue  # not a quad: an update's template skips it too
        held = set().union(*(self.held.get(g, ()) for g in self.graphs))
        return made == held
