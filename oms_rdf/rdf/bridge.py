"""The rdflib bridge: pyoxigraph triples and quads as rdflib graphs (copies).

rdflib is imported inside these functions only, when a caller asks for an
rdflib object; nothing else of oms_rdf needs it. The terms go through N-Triples
or N-Quads text, which both libraries read and write exactly: rdflib's parser
keeps each literal's lexical form as written (its ``NORMALIZE_LITERALS`` is off
while it reads ours, or ``"01"^^xsd:integer`` would come out ``"1"``, and a
zoned ``xsd:date`` without its zone).
"""

from __future__ import annotations

import io as _io
import threading
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pyoxigraph as ox

if TYPE_CHECKING:
    import rdflib

__all__ = ["rdflib_dataset", "rdflib_graph"]


def rdflib_dataset(quads: Iterable[ox.Quad]) -> rdflib.Dataset:
    """Return quads as an ``rdflib.Dataset`` (a copy), through N-Quads."""
    import rdflib

    buffer = _io.BytesIO()
    ox.serialize(quads, buffer, format=ox.RdfFormat.N_QUADS)
    dataset = rdflib.Dataset()
    with warnings.catch_warnings(), _as_written():
        # rdflib 7's own N-Quads parser calls Dataset APIs rdflib deprecates.
        warnings.filterwarnings("ignore", "Dataset.*deprecated", DeprecationWarning)
        dataset.parse(data=buffer.getvalue(), format="nquads")
    return dataset


def rdflib_graph(triples: Iterable[ox.Triple]) -> rdflib.Graph:
    """Return triples as an ``rdflib.Graph`` (a copy), through N-Triples."""
    import rdflib

    buffer = _io.BytesIO()
    ox.serialize(triples, buffer, format=ox.RdfFormat.N_TRIPLES)
    with _as_written():
        return rdflib.Graph().parse(data=buffer.getvalue(), format="nt")


# rdflib's switch is one for the whole process: one reader at a time turns it.
_SWITCH = threading.Lock()


@contextmanager
def _as_written() -> Iterator[None]:
    """rdflib reading literals as written, not normalized to its values."""
    import rdflib

    with _SWITCH:
        before = rdflib.NORMALIZE_LITERALS
        rdflib.NORMALIZE_LITERALS = False
        try:
            yield
        finally:
            rdflib.NORMALIZE_LITERALS = before
