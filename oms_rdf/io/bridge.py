"""The rdflib bridge: a store as an rdflib.Dataset and back."""

from __future__ import annotations

import io as _io
import warnings
from typing import TYPE_CHECKING

import pyoxigraph as ox

from ..store import GrainStore

if TYPE_CHECKING:
    import rdflib
from .importing import import_


def to_rdflib(store: GrainStore) -> rdflib.Dataset:
    """Return the store's graphs as an ``rdflib.Dataset`` (a copy)."""
    import rdflib

    buffer = _io.BytesIO()
    store.backend.dump(buffer, ox.RdfFormat.N_QUADS)
    dataset = rdflib.Dataset()
    with warnings.catch_warnings():
        # rdflib 7's own N-Quads parser calls Dataset APIs rdflib deprecates.
        warnings.filterwarnings("ignore", "Dataset.*deprecated", DeprecationWarning)
        dataset.parse(data=buffer.getvalue(), format="nquads")
    return dataset


def from_rdflib(dataset: rdflib.Dataset, store: GrainStore | None = None) -> GrainStore:
    """Import an ``rdflib.Dataset`` made by :func:`to_rdflib` (or a TriG export) into a store."""
    target = store if store is not None else GrainStore()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Dataset.*deprecated", DeprecationWarning)
        data = dataset.serialize(format="nquads", encoding="utf-8")
    import_(target, _io.BytesIO(data), format="nquads")
    return target
