"""The formats import and export speak: names, file suffixes, pyoxigraph formats, prefixes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, get_args

import pyoxigraph as ox

from ..errors import ErrorCode, SchemaError

Format = Literal[
    "trig",
    "nquads",
    "turtle",
    "ntriples",
    "jsonld",
    "rdfxml",
    "turtle12",
    "trig12",
    "mg",
    "jsonl",
]


FORMATS: tuple[str, ...] = get_args(Format)


_BY_SUFFIX = {
    ".trig": "trig",
    ".nq": "nquads",
    ".nquads": "nquads",
    ".ttl": "turtle",
    ".nt": "ntriples",
    ".jsonld": "jsonld",
    ".mg": "mg",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".rdf": "rdfxml",
    ".owl": "rdfxml",
    ".xml": "rdfxml",
}


RDF_FORMATS = {
    "trig": ox.RdfFormat.TRIG,
    "nquads": ox.RdfFormat.N_QUADS,
    "turtle": ox.RdfFormat.TURTLE,
    "ntriples": ox.RdfFormat.N_TRIPLES,
    "jsonld": ox.RdfFormat.JSON_LD,
    "rdfxml": ox.RdfFormat.RDF_XML,
    "turtle12": ox.RdfFormat.TURTLE,
    "trig12": ox.RdfFormat.TRIG,
}


PREFIXES = {
    "oms": "https://w3id.org/oms-rdf/ns#",
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "prov": "http://www.w3.org/ns/prov#",
}


# Declared in plain knowledge exports: the vocabularies most RDF users share.
TURTLE_PREFIXES = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "owl": "http://www.w3.org/2002/07/owl#",
}


def format_for(path: str | os.PathLike[str], given: str | None = None) -> str:
    """Return the format named, or the one a file name's suffix implies."""
    if given is not None:
        if given not in FORMATS:
            raise SchemaError(
                f"unknown format {given!r}; one of {', '.join(FORMATS)}",
                code=ErrorCode.SCHEMA,
            )
        return given
    suffix = Path(path).suffix.lower()
    if suffix not in _BY_SUFFIX:
        raise SchemaError(
            f"cannot tell the format of {path}; give one of {', '.join(FORMATS)}",
            code=ErrorCode.SCHEMA,
        )
    return _BY_SUFFIX[suffix]
