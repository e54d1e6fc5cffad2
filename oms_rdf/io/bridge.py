"""A store as an rdflib.Dataset and back (the conversion itself: :mod:`oms_rdf.rdf.bridge`)."""

from __future__ import annotations

import io as _io
import warnings
from typing import TYPE_CHECKING

from ..errors import DecodeError
from ..rdf.bridge import rdflib_dataset
from ..store import GrainStore
from .importing import import_

if TYPE_CHECKING:
    import rdflib

__all__ = ["from_rdflib", "to_rdflib"]


def to_rdflib(store: GrainStore, *, grains: bool = False) -> rdflib.Dataset:
    """Return the knowledge in force now as an ``rdflib.Dataset`` (a copy): that
    of :meth:`GrainStore.snapshot` (the held knowledge is ``snapshot(held=True)``).

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
        try:
            data = dataset.serialize(format="nquads", encoding="utf-8")
        except Exception as exc:  # rdflib's own: an IRI N-Quads cannot write
            raise DecodeError(
                f"rdflib cannot write this dataset as N-Quads: {exc}", path="dataset"
            ) from exc
    import_(target, _io.BytesIO(data), format="nquads")
    return target
