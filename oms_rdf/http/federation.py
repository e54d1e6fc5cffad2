"""Federated queries are refused by both servers: a ``SERVICE`` clause would make
the server fetch whatever IRI the client names.

>>> is_federated("SELECT * { SERVICE <http://elsewhere/sparql> { ?s ?p ?o } }")
True
>>> is_federated("SELECT * { ?s <x:service> ?o }")
False
"""

from __future__ import annotations

import re

__all__ = ["is_federated"]

# SERVICE as the engine reads it: the keyword (unless it is a variable's name or
# begins a prefixed name's local part; after a number, or "true", it is one),
# spaces or comments (ending at a CR or a LF), an optional SILENT, the service
# (an IRI, a variable or a prefixed name, any of them), and its group's "{".
# Generous on purpose: a text it takes for SERVICE is refused, never run.
_GAP = r"(?:\s|#[^\n\r]*)"
_REF = r"(?:<[^>]*>|[?$][^\s{#]*|[^\s{#<]*:[^\s{#]*)"
_SERVICE = re.compile(
    rf"(?<![?$:])SERVICE{_GAP}*"
    rf"(?:SILENT{_GAP}*)?{_REF}{_GAP}*\{{",
    re.IGNORECASE,
)


def is_federated(query: str, /) -> bool:
    """Return whether SPARQL text has a ``SERVICE`` clause (a federated query)."""
    return _SERVICE.search(query) is not None
