"""What the commands print: JSON, belief rows, and tables that fit the terminal."""

from __future__ import annotations

import base64
import csv
import json
import shutil
import sys
import unicodedata
from collections.abc import Sequence
from typing import Any

import click
import pyoxigraph as ox

from ..codec.grain import Grain, system_from
from ..rdf.mapping import millis_literal
from ..store import Solutions

TABLE_LIMIT = 50  # the beliefs a table shows unless --limit says otherwise
ELLIPSIS = "…"
BELIEF_COLUMNS = [
    "address",
    "subject",
    "relation",
    "object",
    "confidence",
    "valid_from",
    "valid_to",
]


def dump_json(value: Any) -> str:
    """Return ``value`` as indented JSON; bytes become ``{"$base64": ...}``."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=json_default)


def json_default(value: Any) -> Any:
    """The JSON of what :mod:`json` cannot write: bytes as base64, sets as lists."""
    if isinstance(value, bytes):
        return {"$base64": base64.b64encode(value).decode()}
    if isinstance(value, frozenset | set):
        return sorted(value)
    raise TypeError(f"cannot show {type(value).__name__} as JSON")


def iso(ms: int | None) -> str | None:
    """Epoch ms as the ``xsd:dateTime`` text the store writes (None stays None)."""
    return None if ms is None else millis_literal(ms).value


def belief_row(grain: Grain) -> dict[str, Any]:
    """A grain as one row of the belief tables (times in ISO 8601 UTC)."""
    f = grain.fields
    return {
        "address": grain.address,
        "subject": f.get("subject"),
        "relation": f.get("relation"),
        "object": f.get("object"),
        "confidence": f.get("confidence"),
        "valid_from": iso(f.get("valid_from", system_from(grain))),
        "valid_to": iso(f.get("valid_to")),
        "namespace": grain.namespace,
    }


def print_grains(grains: Sequence[Grain], *, as_json: bool) -> None:
    """Print grains as a JSON array of rows, or as a table that fits the terminal."""
    rows = [belief_row(g) for g in grains]
    click.echo(dump_json(rows) if as_json else fitted_table(rows, BELIEF_COLUMNS))


def table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """Rows as a plain table: each column as wide as its widest cell."""
    cells = [
        [("" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows
    ]
    widths = [
        max([columns_of(c), *(columns_of(row[i]) for row in cells)])
        for i, c in enumerate(columns)
    ]
    lines = [
        "  ".join(pad(v, w) for v, w in zip(row, widths, strict=True))
        for row in [columns, *cells]
    ]
    return "\n".join(line.rstrip() for line in lines)


def fitted_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """:func:`table` whose lines fit the terminal's width: the widest columns
    are narrowed first, and a cut cell ends in an ellipsis."""
    width = shutil.get_terminal_size().columns
    cells = [
        [("" if r.get(c) is None else " ".join(str(r.get(c)).split())) for c in columns]
        for r in rows
    ]
    widths = [
        max([columns_of(c), *(columns_of(row[i]) for row in cells)])
        for i, c in enumerate(columns)
    ]
    room = max(width - 2 * (len(columns) - 1), len(columns) * 4)
    while sum(widths) > room:
        widest = max(range(len(widths)), key=lambda i: widths[i])
        if widths[widest] <= 4:
            break
        widths[widest] -= 1
    lines = [
        "  ".join(pad(cut(v, w), w) for v, w in zip(row, widths, strict=True))
        for row in [columns, *cells]
    ]
    return "\n".join(line.rstrip() for line in lines)


def cut(text: str, width: int) -> str:
    """``text`` if it fits ``width`` terminal columns, else its start and an
    ellipsis."""
    if columns_of(text) <= width:
        return text
    kept, used = [], 0
    for char in text:
        used += _width(char)
        if used > width - 1:
            break
        kept.append(char)
    return "".join(kept) + ELLIPSIS


def pad(text: str, width: int) -> str:
    """``text`` and spaces to fill ``width`` terminal columns."""
    return text + " " * (width - columns_of(text))


def columns_of(text: str) -> int:
    """The terminal columns ``text`` takes: two for a wide (East Asian) character,
    none for a combining mark, one for the rest."""
    return sum(_width(char) for char in text)


def _width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def print_rows(result: Solutions, fmt: str) -> None:
    """Print SELECT rows as a table, JSON, CSV or TSV."""
    names = [v.value for v in result.variables]
    rows = [
        {n: (None if row[n] is None else cell(row[n])) for n in names} for row in result
    ]
    if fmt == "json":
        click.echo(dump_json(rows))
    elif fmt in ("csv", "tsv"):
        writer = csv.writer(
            sys.stdout, delimiter="," if fmt == "csv" else "\t", lineterminator="\n"
        )
        writer.writerow(names)
        writer.writerows(
            [[r[n] if r[n] is not None else "" for n in names] for r in rows]
        )
    else:
        click.echo(table(rows, names))


def cell(term: Any) -> str:
    """A term as a cell: IRIs and literals by value, blank nodes as ``_:label``."""
    return str(term) if isinstance(term, ox.BlankNode) else str(term.value)
