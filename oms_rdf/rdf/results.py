r"""SPARQL 1.1 query results written as JSON, XML, CSV and TSV (W3C result formats).

Rows are plain pyoxigraph terms (None where unbound), so a result read from any
store, or built in Python, is written the same way by the server, the CLI and
:meth:`Solutions.serialize`.

>>> import pyoxigraph as ox
>>> write_solutions(["x"], [[ox.Literal("1", datatype=ox.NamedNode(
...     "http://www.w3.org/2001/XMLSchema#integer"))]], "text/csv")
b'x\r\n1\r\n'
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import pyoxigraph as ox

from ..errors import QueryError

__all__ = [
    "NOT_XML",
    "SOLUTION_TYPES",
    "media_type",
    "term_text",
    "write_boolean",
    "write_solutions",
]

# The result formats, the first being the default.
SOLUTION_TYPES = (
    "application/sparql-results+json",
    "application/sparql-results+xml",
    "text/csv",
    "text/tab-separated-values",
)
_STRING = "http://www.w3.org/2001/XMLSchema#string"
_SHORT = dict(zip(("json", "xml", "csv", "tsv"), SOLUTION_TYPES, strict=True))


def media_type(format: str) -> str:
    """The media type of a result format named ``json``, ``xml``, ``csv`` or ``tsv``."""
    media = _SHORT.get(format, format)
    if media not in SOLUTION_TYPES:
        from ..errors import SchemaError

        raise SchemaError(
            f"a result format is one of {sorted(_SHORT)} or a media type in "
            f"{list(SOLUTION_TYPES)}, not {format!r}",
            path="format",
        )
    return media


def write_boolean(value: bool, media: str) -> bytes:
    """Write the answer of an ASK query."""
    if media.endswith("json"):
        return json.dumps({"head": {}, "boolean": value}).encode()
    if media.endswith("xml"):
        return (
            '<?xml version="1.0"?>\n<sparql xmlns="http://www.w3.org/2005/sparql-results#">'
            f"<head/><boolean>{'true' if value else 'false'}</boolean></sparql>\n"
        ).encode()
    # No W3C form for ASK in CSV or TSV: one column, as Jena writes it, with each
    # format's own header and line ends (TSV names a variable ?x; CSV ends in CRLF).
    answer = "true" if value else "false"
    if media.endswith("tab-separated-values"):
        return f"?_askResult\n{answer}\n".encode()
    return f"_askResult\r\n{answer}\r\n".encode()


def write_solutions(
    names: Sequence[str], rows: Iterable[Iterable[Any]], media: str
) -> bytes:
    """Write rows of terms (None when unbound) under variables ``names``."""
    names = list(names)
    table = [list(row) for row in rows]
    if media.endswith("json"):
        bindings = [
            {n: _json_term(t) for n, t in zip(names, row, strict=True) if t is not None}
            for row in table
        ]
        body = {"head": {"vars": names}, "results": {"bindings": bindings}}
        return json.dumps(body, ensure_ascii=False).encode()
    if media.endswith("xml"):
        return _xml(names, table).encode()
    if media == "text/csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(names)
        writer.writerows([[term_text(t) for t in row] for row in table])
        return out.getvalue().encode()
    lines = ["\t".join(f"?{n}" for n in names)]
    lines += ["\t".join("" if t is None else str(t) for t in row) for row in table]
    return ("\n".join(lines) + "\n").encode()


def _json_term(term: Any) -> dict[str, str]:
    if isinstance(term, ox.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, ox.Literal):
        out = {"type": "literal", "value": term.value}
        if term.language:
            out["xml:lang"] = term.language
        elif term.datatype.value != _STRING:
            out["datatype"] = term.datatype.value
        return out
    return {"type": "triple", "value": str(term)}


def term_text(term: Any) -> str:
    """A term as a cell of text: a value, ``_:label`` for a blank node, empty if unbound."""
    if term is None:
        return ""
    if isinstance(term, ox.BlankNode):
        return f"_:{term.value}"
    return str(term.value) if isinstance(term, ox.NamedNode | ox.Literal) else str(term)


# Characters XML 1.0 cannot carry, even as references (SPARQL XML and RDF/XML).
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(value: str) -> str:
    """Text as XML content: escaped, a CR kept as a reference (a parser would
    read a bare one as a line feed).

    Raises:
        QueryError: ERR_QUERY for a control character XML 1.0 cannot carry.
    """
    if NOT_XML.search(value):
        raise QueryError(
            "the answer holds a control character that XML 1.0 cannot carry; ask "
            "for SPARQL JSON (application/sparql-results+json) instead",
            path="Accept",
        )
    return escape(value).replace("\r", "&#13;")


def _xml(names: list[str], rows: list[list[Any]]) -> str:
    parts = [
        '<?xml version="1.0"?>\n<sparql xmlns="http://www.w3.org/2005/sparql-results#">',
        "<head>",
        *(f"<variable name={quoteattr(n)}/>" for n in names),
        "</head><results>",
    ]
    for row in rows:
        parts.append("<result>")
        for name, term in zip(names, row, strict=True):
            if term is None:
                continue
            if isinstance(term, ox.NamedNode):
                value = f"<uri>{_text(term.value)}</uri>"
            elif isinstance(term, ox.BlankNode):
                value = f"<bnode>{_text(term.value)}</bnode>"
            elif isinstance(term, ox.Literal) and term.language:
                value = f"<literal xml:lang={quoteattr(term.language)}>{_text(term.value)}</literal>"
            elif isinstance(term, ox.Literal) and term.datatype.value == _STRING:
                value = f"<literal>{_text(term.value)}</literal>"  # a simple literal
            elif isinstance(term, ox.Literal):
                value = f"<literal datatype={quoteattr(term.datatype.value)}>{_text(term.value)}</literal>"
            else:
                value = f"<literal>{_text(str(term))}</literal>"
            parts.append(f"<binding name={quoteattr(name)}>{value}</binding>")
        parts.append("</result>")
    parts.append("</results></sparql>\n")
    return "".join(parts)
