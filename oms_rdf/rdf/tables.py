"""Answers as tables: typed Python values, pandas DataFrames, and HTML for notebooks.

A query row holds RDF terms; a data scientist wants numbers, times and text. The
rule, in one place:

- ``xsd:integer`` and its subtypes are ``int``; ``xsd:double``, ``float`` and
  ``decimal`` are ``float``; ``xsd:boolean`` is ``bool``;
- ``xsd:dateTime`` is an aware ``datetime`` (a time without an offset is read as
  UTC), ``xsd:date`` a ``date``;
- IRIs are their text, or ``prefix:local`` when ``prefixes`` are given; blank nodes
  are ``_:label``; any other literal is its lexical form; a value whose lexical
  form is not valid for its datatype stays text; unbound is ``None``.

In a DataFrame each column takes the type its values share (nullable ``Int64``,
``float64``, ``boolean``, ``datetime64[…, UTC]``; integers past 64 bits stay Python
``int`` in an object column), and unbound values are missing.
pandas is optional (the ``[notebooks]`` extra) and imported only when a frame is
asked for.

>>> import pyoxigraph as ox
>>> python_value(ox.Literal("2024-03-01T09:00:00+01:00", datatype=ox.NamedNode(
...     "http://www.w3.org/2001/XMLSchema#dateTime")))
datetime.datetime(2024, 3, 1, 8, 0, tzinfo=datetime.timezone.utc)
>>> python_value(ox.NamedNode("http://www.w3.org/2002/07/owl#Class"),
...              {"owl": "http://www.w3.org/2002/07/owl#"})
'owl:Class'
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, SupportsIndex, overload

import pyoxigraph as ox

from ..codec.grain import Grain, system_from
from ..times import moment
from .limits import CACHED_TEXT_CHARS

if TYPE_CHECKING:  # pandas is optional
    import pandas

__all__ = [
    "GrainList",
    "frame",
    "grain_records",
    "html_table",
    "python_value",
    "query_prefixes",
]

_XSD = "http://www.w3.org/2001/XMLSchema#"
_INTEGER_NAMES = """
    integer int long short byte nonNegativeInteger positiveInteger negativeInteger
    nonPositiveInteger unsignedLong unsignedInt unsignedShort unsignedByte
"""
_INTEGERS = frozenset(_XSD + name for name in _INTEGER_NAMES.split())
_FLOATS = frozenset({_XSD + "double", _XSD + "float", _XSD + "decimal"})
_LOCAL = re.compile(r"[A-Za-z_][\w\-]*(?:\.[\w\-]+)*")
# One part of a query's prologue: space, a comment, a PREFIX or a BASE.
_PROLOGUE_PART = re.compile(
    r"[\x20\t\r\n]+|\#[^\n\r]*|PREFIX\s+([\w\-.]*):\s*<([^>]*)>|BASE\s*<[^>]*>",
    re.IGNORECASE,
)
SHOWN = 50  # rows an HTML table shows before it says how many more there are
# The lexical spaces of XSD (ASCII digits only), checked before Python reads a
# form: int(), float() and fromisoformat() take more than XSD does.
_DIGITS = r"[0-9]"
_DECIMAL = rf"[+-]?(?:{_DIGITS}+(?:\.{_DIGITS}*)?|\.{_DIGITS}+)"
_ZONE = r"(?:Z|[+-][0-9]{2}:[0-9]{2})?"
_DAY = r"-?[0-9]{4,}-[0-9]{2}-[0-9]{2}"
_FORMS = {
    **{name: re.compile(rf"[+-]?{_DIGITS}+", re.ASCII) for name in _INTEGERS},
    _XSD + "decimal": re.compile(_DECIMAL, re.ASCII),
    **{
        _XSD + name: re.compile(rf"{_DECIMAL}(?:[eE][+-]?{_DIGITS}+)?|[+-]?INF|NaN")
        for name in ("double", "float")
    },
    _XSD + "dateTime": re.compile(
        rf"{_DAY}T[0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}(?:\.[0-9]+)?{_ZONE}", re.ASCII
    ),
    _XSD + "date": re.compile(rf"{_DAY}{_ZONE}", re.ASCII),
}


def python_value(term: Any, prefixes: Mapping[str, str] | None = None) -> Any:
    """Return the Python value of an RDF term (see the module's rule)."""
    if term is None:
        return None
    if isinstance(term, ox.NamedNode):
        return _compact(term.value, prefixes) if prefixes else term.value
    if isinstance(term, ox.BlankNode):
        return f"_:{term.value}"
    if not isinstance(term, ox.Literal):
        return str(term)
    datatype, text = term.datatype.value, term.value
    form = _FORMS.get(datatype)
    if form is not None and not form.fullmatch(text):
        return text  # Python reads more than XSD allows ("1_000", other digits)
    try:
        if datatype in _INTEGERS:
            return int(text)
        if datatype in _FLOATS:
            return float(text)
        if datatype == _XSD + "boolean":
            if text in ("true", "1", "false", "0"):
                return text in ("true", "1")
        elif datatype in (_XSD + "dateTime", _XSD + "dateTimeStamp"):
            moment = datetime.fromisoformat(text)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            return moment.astimezone(UTC)
        elif datatype == _XSD + "date":
            return date.fromisoformat(text[:10])
    except (ValueError, OverflowError):
        pass  # not a valid form of its datatype: the text is all there is
    return text


def _compact(iri: str, prefixes: Mapping[str, str]) -> str:
    best, compact = "", iri  # the longest namespace wins
    for prefix, namespace in prefixes.items():
        if iri.startswith(namespace) and len(namespace) > len(best):
            local = iri[len(namespace) :]
            if local == "" or _LOCAL.fullmatch(local):
                best, compact = namespace, f"{prefix}:{local}"
    return compact


def query_prefixes(sparql: str) -> dict[str, str]:
    """The ``PREFIX`` declarations of a query's prologue, to compact its answers
    with (a text that only looks like one, in a string further on, is none)."""
    if len(sparql) > CACHED_TEXT_CHARS:
        return dict(_prologue(sparql))
    return dict(_declared(sparql))


@lru_cache(maxsize=256)
def _declared(sparql: str) -> tuple[tuple[str, str], ...]:
    return _prologue(sparql)


def _prologue(sparql: str) -> tuple[tuple[str, str], ...]:
    """The (prefix, namespace) pairs the prologue declares, in order."""
    found, at = [], 0
    while (part := _PROLOGUE_PART.match(sparql, at)) is not None and part.end() > at:
        if part.group(1) is not None:
            found.append((part.group(1), part.group(2)))
        at = part.end()
    return tuple(found)


def frame(
    columns: Sequence[str],
    rows: Iterable[Iterable[Any]],
    prefixes: Mapping[str, str] | None = None,
) -> pandas.DataFrame:
    """Return rows of RDF terms as a DataFrame with one typed column per variable."""
    values: list[list[Any]] = [[] for _ in columns]
    for row in rows:
        for column, term in zip(values, row, strict=True):
            column.append(python_value(term, prefixes))
    return _frame(dict(zip(columns, values, strict=True)))


def _frame(data: Mapping[str, list[Any]]) -> pandas.DataFrame:
    pd = _pandas()
    return pd.DataFrame({name: _series(pd, v) for name, v in data.items()})


def _series(pd: Any, values: list[Any]) -> Any:
    """A column in the type its values share; unbound values are missing."""
    kinds = {type(v) for v in values if v is not None}
    if kinds == {bool}:
        return pd.array(values, dtype="boolean")
    fits = all(not isinstance(v, int) or -(2**63) <= v < 2**63 for v in values)
    if kinds == {int} and fits:
        return pd.array(values, dtype="Int64")
    if kinds and kinds <= {int, float} and fits:
        return pd.array(
            [float("nan") if v is None else float(v) for v in values], dtype="float64"
        )
    if kinds == {datetime}:
        try:
            return pd.to_datetime(values, utc=True)
        except (ValueError, OverflowError):  # beyond what nanoseconds can hold
            pass
    return pd.Series(values, dtype=object if kinds - {str} else None)


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:  # pragma: no cover - the [notebooks] extra brings it
        from ..errors import SchemaError

        raise SchemaError(
            "a DataFrame needs pandas: pip install 'oms-rdf[notebooks]'",
            path="pandas",
        ) from None
    return pandas


# --- grains as rows ---------------------------------------------------------------

_GRAIN_COLUMNS = tuple(
    "address type subject relation object confidence valid_from valid_to "
    "system_from namespace source_type".split()
)
_STATE_COLUMNS = tuple(
    "status verification system_to superseded_by effective_confidence".split()
)
_TIMES = ("valid_from", "valid_to", "system_from", "system_to")


def grain_records(
    grains: Iterable[Grain], status: Callable[[str], Any] | None = None
) -> list[dict[str, Any]]:
    """One plain record per grain (times as aware datetimes), with its index state
    when ``status`` (``GrainStore.status``) is given."""
    records = []
    for grain in grains:
        since = system_from(grain)
        record: dict[str, Any] = {
            "address": grain.address,
            "type": grain.type,
            "subject": grain.get("subject"),
            "relation": grain.get("relation"),
            "object": grain.get("object"),
            "confidence": grain.get("confidence"),
            # Valid from its system time unless it says otherwise (the in-force
            # rule's, and oms:validFrom's): not an open start.
            "valid_from": grain.get("valid_from", since),
            "valid_to": grain.get("valid_to"),
            "system_from": since,
            "namespace": grain.namespace,
            "source_type": grain.get("source_type"),
        }
        if status is not None:
            state = status(grain.address)
            effective = state.effective_confidence
            record |= {
                "status": state.status,
                "verification": state.verification,
                "system_to": state.system_to,
                "superseded_by": state.superseded_by,
                "effective_confidence": (
                    record["confidence"] if effective is None else effective
                ),
            }
        for name in _TIMES:
            if isinstance(record.get(name), int):
                record[name] = moment(record[name])
        records.append(record)
    return records


class GrainList(list[Grain]):
    """Grains as the store answers them: a plain list, shown as a table in a
    notebook, and one call from a DataFrame (:meth:`frame`)."""

    def __init__(
        self, grains: Iterable[Grain] = (), status: Callable[[str], Any] | None = None
    ) -> None:
        super().__init__(grains)
        self._status = status

    @overload
    def __getitem__(self, index: SupportsIndex) -> Grain: ...
    @overload
    def __getitem__(self, index: slice) -> GrainList: ...
    def __getitem__(self, index: SupportsIndex | slice) -> Grain | GrainList:
        if isinstance(index, slice):
            return GrainList(super().__getitem__(index), self._status)
        return super().__getitem__(index)

    def records(self) -> list[dict[str, Any]]:
        """The grains as plain records, with their index state (see :func:`grain_records`)."""
        return grain_records(self, self._status)

    def frame(self) -> pandas.DataFrame:
        """The grains as a DataFrame: one row each, what they say, times and state."""
        records = self.records()
        names = _GRAIN_COLUMNS + (_STATE_COLUMNS if self._status else ())
        table = _frame({n: [r[n] for r in records] for n in names})
        pd = _pandas()
        for name in _TIMES:
            # A time column is one even when no grain has a value (NaT), and every
            # time column has the grains' own unit, the millisecond.
            if name not in table:
                continue
            values = [r[name] for r in records]
            if all(isinstance(v, datetime) or v is None for v in values):
                try:
                    column = pd.to_datetime(pd.Series(values, dtype=object), utc=True)
                    table[name] = column.dt.as_unit("ms")
                except (ValueError, OverflowError):  # beyond what the unit holds
                    pass
        return table

    def _repr_html_(self) -> str:
        shown = grain_records(self[:SHOWN], self._status)
        names = [n for n in _GRAIN_COLUMNS + _STATE_COLUMNS if shown and n in shown[0]]
        cells = [[_cell(r[n], n) for n in names] for r in shown]
        return html_table(names, cells, total=len(self))


def _cell(value: Any, name: str) -> str:
    if value is None:
        return ""
    if name in ("address", "superseded_by"):
        return str(value)[:12] + "…"
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds").replace("+00:00", "Z")
    return str(value)


def html_table(
    columns: Sequence[str], rows: Sequence[Sequence[str]], *, total: int | None = None
) -> str:
    """An HTML table of text cells (escaped here), saying how many rows it leaves out.

    A wide table is not clipped: it sits in a box that scrolls sideways, and a
    long cell wraps within a column of bounded width, with all of its text.
    """
    total = len(rows) if total is None else total
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td{_WRAP}>{html.escape(c)}</td>" for c in row) + "</tr>"
        for row in rows
    )
    note = f"{total} rows" if total == len(rows) else f"{len(rows)} of {total} rows"
    return (
        f'<div style="overflow-x: auto; max-width: 100%">'
        f"<table><caption>{note}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


# A cell's style: long text wraps (anywhere, for IRIs), in a column of bounded width.
_WRAP = (
    ' style="max-width: 32em; white-space: normal; overflow-wrap: anywhere; '
    'text-align: left; vertical-align: top"'
)
