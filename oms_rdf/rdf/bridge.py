"""The rdflib bridge: pyoxigraph triples and quads as rdflib graphs (copies).

rdflib is imported inside these functions only, when a caller asks for an
rdflib object; nothing else of oms_rdf needs it. The terms go through N-Triples
or N-Quads text, which both libraries read and write exactly.
"""

from __future__ import annotations

import io as _io
import warnings
from collections.abc import Iterable
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
    with warnings.catch_warnings():
        # rdflib 7's own N-Quads parser calls Dataset APIs rdflib deprecates.
        warnings.filterwarnings("ignore", "Dataset.*deprecated", DeprecationWarning)
        dataset.parse(data=buffer.getvalue(), format="nquads")
    return dataset


def rdflib_graph(triples: Iterable[ox.Triple]) -> rdflib.Graph:
    """Return triples as an ``rdflib.Graph`` (a copy), through N-Triples."""
    import rdflib

    buffer = _io.BytesIO()
    ox.serialize(triples, buffer, format=ox.RdfFormat.N_TRIPLES)
    return rdflib.Graph().parse(data=buffer.getvalue(), format="nt")
