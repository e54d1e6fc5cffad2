"""Whether an imported grain layer is exactly what the mapping makes of its blobs.

An export carries each grain twice: its blob, which its address verifies, and its
grain layer (the statement node's quads in the default graph), which SPARQL and
the store's own lookups read. Nothing verifies the layer but this: a file that
drops a grain's ``oms:systemFrom`` hides a stored belief, one that changes its
``rdf:object`` makes SPARQL report a claim the blob does not make, one that adds
``oms:graph oms:blobs`` points the knowledge rebuild at the blobs. So a grain is
restored only when the quads the source gives its node are those
:func:`~oms_rdf.rdf.mapping.grain_to_quads` makes from its blob with the store's
settings, no more and no fewer.

The two sides are compared as Oxigraph keeps them (it stores literals by value:
``"1.0"^^xsd:double`` reads back as ``"1"``), through a keyed hash per node, so the
check holds a few integers per grain whatever the source's size or order.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from functools import lru_cache

import pyoxigraph as ox

from ..codec.grain import Grain, system_from
from ..rdf.mapping import MappingSettings, grain_to_quads, millis_literal
from ..rdf.vocab import OMS, XSD

__all__ = ["LayerCheck"]

_DEFAULT = ox.DefaultGraph()
# Datatypes Oxigraph keeps exactly as written.
_AS_WRITTEN = frozenset(
    {XSD.string.value, "http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON"}
)
_DATETIME = XSD.dateTime.value
# The UTC times the mapping writes, whose stored form drops the fraction's zeros.
_UTC_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z")
_SCRATCH = ox.Store()
_SCRATCH_LOCK = threading.Lock()
_S, _P = ox.NamedNode("urn:s"), ox.NamedNode("urn:p")


@lru_cache(maxsize=65_536)
def _stored_form(literal: ox.Literal) -> ox.Literal:
    """The literal as Oxigraph stores it, asked of Oxigraph itself."""
    with _SCRATCH_LOCK:
        _SCRATCH.clear()
        _SCRATCH.add(ox.Quad(_S, _P, literal))
        stored = next(iter(_SCRATCH)).object
    assert isinstance(stored, ox.Literal)
    return stored


def stored_term(term: object) -> object:
    """A term as the store holds it: literals in Oxigraph's canonical form."""
    if type(term) is not ox.Literal:
        return term
    datatype = term.datatype.value
    if term.language is None and datatype in _AS_WRITTEN:
        return term
    if datatype == _DATETIME:
        utc = _UTC_TIME.fullmatch(term.value)
        if utc is not None:
            fraction = (utc.group(2) or "").rstrip("0")
            text = f"{utc.group(1)}.{fraction}Z" if fraction else f"{utc.group(1)}Z"
            return ox.Literal(text, datatype=XSD.dateTime)
    return _stored_form(term)


class LayerCheck:
    """Feed it the source's grain-layer quads and its grains; then :meth:`differing`."""

    def __init__(self, settings: MappingSettings) -> None:
        self.settings = settings
        # grain node -> (quads, sum of their keyed hashes): the source's, the mapping's
        self.given: dict[object, tuple[int, int]] = {}
        self.made: dict[object, tuple[int, int]] = {}
        # ... and the layer an earlier version's export gives it, where that differs
        self.earlier: dict[object, tuple[int, int]] = {}

    def see(self, quad: ox.Quad) -> None:
        """Take a quad of the source's grain layer (the default graph).

        An RDF 1.2 reifier (a triple term object) is an export's view of the
        layer, never written: it is not part of the layer.
        """
        if type(quad.object) is not ox.Triple:
            _add(self.given, quad.subject, quad.predicate, quad.object)

    def grain(self, grain: Grain) -> None:
        """Take a grain of the source: what the mapping makes of its blob.

        An export of an earlier version wrote ``oms:createdAt`` beside an equal
        ``oms:systemFrom``; that layer is the grain's too (ontology README,
        "Earlier layouts"), so it is kept as the second layer the blob makes.
        """
        node: object = None
        for quad in grain_to_quads(grain, self.settings):
            if quad.graph_name == _DEFAULT:
                node = quad.subject
                _add(self.made, node, quad.predicate, quad.object)
        created = grain.fields.get("created_at")
        if node is not None and type(created) is int and created == system_from(grain):
            earlier: dict[object, tuple[int, int]] = {node: self.made[node]}
            _add(earlier, node, OMS.createdAt, millis_literal(created))
            self.earlier[node] = earlier[node]

    def matches(self, node: object) -> bool:
        """Whether the source gives ``node`` exactly the layer its blob makes."""
        given = self.given.get(node)
        return given == self.made.get(node) or (
            given is not None and given == self.earlier.get(node)
        )

    def differing(self) -> Iterator[object]:
        """The grain nodes whose layer in the source is not the mapping's."""
        for node in self.made:
            if not self.matches(node):
                yield node


def _add(sums: dict[object, tuple[int, int]], s: object, p: object, o: object) -> None:
    # Python's string hash is keyed per process: a source cannot be made to collide.
    key = hash(f"{p} {stored_term(o)}") & 0xFFFF_FFFF_FFFF_FFFF
    count, total = sums.get(s, (0, 0))
    sums[s] = (count + 1, (total + key) & 0xFFFF_FFFF_FFFF_FFFF)
