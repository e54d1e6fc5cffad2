"""The rdflib bridge: a store as an rdflib.Dataset and back."""

from __future__ import annotations

import io as _io
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING

import pyoxigraph as ox

from ..store import GrainStore

if TYPE_CHECKING:
    import rdflib
from .importing import import_


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


def to_rdflib(store: GrainStore, *, grains: bool = False) -> rdflib.Dataset:
    """Return the knowledge held now as an ``rdflib.Dataset`` (a copy).

    The default graph holds the plain triples, adopted named graphs keep their
    names, and the terms are exactly those the grains record. With ``grains=True``,
    every graph of the store as laid out (what :func:`from_rdflib` restores).
    """
    return rdflib_dataset(store.backend.quads() if grains else store.snapshot())


def from_rdflib(dataset: rdflib.Dataset, store: GrainStore | None = None) -> GrainStore:
    """Import an ``rdflib.Dataset`` into a store: grains restored, other RDF adopted."""
    target = store if store is not None else GrainStore()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Dataset.*deprecated", DeprecationWarning)
        data = dataset.serialize(format="nquads", encoding="utf-8")
    import_(target, _io.BytesIO(data), format="nquads")
    return target
