"""The arguments of the MCP tools: their types, ranges and lengths (pydantic, so
that the client sees them in each tool's schema), and their refusals as spec codes.

>>> from pydantic import TypeAdapter
>>> TypeAdapter(Confidence).validate_python(0.5)
0.5
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, Strict, ValidationError

from ...errors import ErrorCode
from ...rdf.limits import MAX_QUERY_CHARS

__all__ = [
    "MAX_OBJECT",
    "MAX_ROWS",
    "MAX_TEXT",
    "Address",
    "Confidence",
    "ContextMap",
    "Namespace",
    "Object",
    "Protection",
    "Query",
    "SourceType",
    "Span",
    "Text",
    "When",
    "argument_error",
]

MAX_TEXT = 4096  # characters of a subject, relation, reason or note
MAX_OBJECT = 64 * 1024  # characters of a text object
MAX_ROWS = 10_000  # rows (or triples) one sparql call may answer

Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]
Address = Annotated[
    str,
    Field(
        min_length=8,
        max_length=64,
        description="a belief's content address, or a unique prefix of 8+ hex",
    ),
]
Namespace = Annotated[str, Field(min_length=1, max_length=256)]
When = Annotated[
    Annotated[str, Field(min_length=1, max_length=64)] | Annotated[int, Strict()],
    Field(
        description="ISO 8601 (2024-06-01, 2024-06-01T12:00:00Z; no zone is UTC) "
        "or epoch milliseconds (1717243200000, or as text ms:1717243200000), as "
        "the facts API takes them",
    ),
]
Span = Annotated[
    str,
    Field(
        min_length=1,
        max_length=130,
        description="a range START/END, each end as `When` takes a time, or .. for "
        "an open end (2024-01-01/2025-01-01, 2024/.., ../..)",
    ),
]
# Numbers are strict: a bool, or a number written as text, is refused, not
# converted (the schema says number; what is sent is what is meant).
Confidence = Annotated[float, Strict(), Field(ge=0.0, le=1.0, allow_inf_nan=False)]


def _whole(value: object) -> object:
    """A JSON number with no fraction (``5.0``) is the integer JSON Schema's
    "integer" says it is; any other value goes on to the strict check."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


# Last in the Annotated of a strict int (a limit), so that it runs first and the
# schema keeps its bounds as minimum/maximum: 5 and 5.0 are taken, "5", 5.5 and
# true are not.
WHOLE = BeforeValidator(_whole)


Scalar = str | bool | int | float | None
Object = Annotated[
    Annotated[str, Field(min_length=1, max_length=MAX_OBJECT)]
    | Annotated[
        dict[Annotated[str, Field(max_length=256)], Scalar], Field(max_length=64)
    ],
    Field(description="the belief's object: text, or a map of named values"),
]
ContextMap = Annotated[
    dict[Annotated[str, Field(max_length=256)], Scalar],
    Field(max_length=64, description="free key/value context for the belief"),
]
SourceType = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        description="how the belief was learnt: agent_inferred (default), "
        "user_explicit, sensor, system, llm_generated, imported, ...",
    ),
]
Protection = Annotated[
    Literal["open", "soft_locked", "locked", "hold"],
    Field(
        description="protect the belief: soft_locked (changed only with a "
        "justification), locked (never changed), hold (never changed nor erased)"
    ),
]
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]


def argument_error(tool: str, exc: ValidationError) -> str:
    """One line naming each refused argument: ERR_RANGE for a number out of its
    range, ERR_EMPTY for empty text, else ERR_SCHEMA."""
    errors = exc.errors(include_url=False, include_input=False)
    kinds = {str(e["type"]) for e in errors}
    if kinds <= {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}:
        code = ErrorCode.RANGE
    elif kinds == {"string_too_short"} and all(
        e.get("ctx", {}).get("min_length") == 1 for e in errors
    ):
        code = ErrorCode.EMPTY
    else:
        code = ErrorCode.SCHEMA
    said: dict[str, list[str]] = {}
    for e in errors:
        where = ".".join(_path(e["loc"])) or "arguments"
        if e["msg"] not in said.setdefault(where, []):
            said[where].append(e["msg"])
    text = "; ".join(f"{k}: {' or '.join(v)}" for k, v in list(said.items())[:5])
    return f"{code}: {tool} refused its arguments: {text} (at $.{next(iter(said))})"


_TAG = re.compile(
    r"(?:str|bool|int|float|none|dict|list)\Z|constrained-|function-|.*\["
)


def _path(loc: Sequence[int | str]) -> list[str]:
    """An argument's path without pydantic's names of union members (``str``,
    ``dict[str,...]``), which are not where the caller put anything."""
    return [
        str(p)
        for n, p in enumerate(loc)
        if n == 0 or not isinstance(p, str) or not _TAG.match(p)
    ]
