"""Request bodies and arguments as the routes take them: text, JSON objects,
grains, numbers, each refused with the spec's code when it is not what is expected.

>>> body_text(b"caf\\xc3\\xa9")
'café'
>>> whole_number("25", 100), whole_number(None, 100)
(25, 100)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qs

from ..errors import DecodeError, ErrorCode, SchemaError
from ..io import loads_json_grain
from ..io.jsonl import unique_keys
from ..times import span_millis, to_millis

__all__ = [
    "GRAIN_TYPE",
    "TIME_PARAMETERS",
    "body_text",
    "check_url_query",
    "finite_number",
    "form_params",
    "given_once",
    "grain_body",
    "json_body",
    "param_millis",
    "param_span",
    "whole_number",
]

T = TypeVar("T")
GRAIN_TYPE = "application/vnd.oms.grain"  # a raw grain blob

# The query parameters that are times, on every route that takes them.
TIME_PARAMETERS = (
    "valid_at",
    "as_of",
    "valid_during",
    "system_during",
    "valid_from",
    "valid_to",
    "since",
    "until",
)


def given_once(
    params: Mapping[str, Sequence[str]], names: Iterable[str] = TIME_PARAMETERS
) -> None:
    """Refuse a parameter of ``names`` (the times unless told) given twice:
    which one counts is nowhere written down (one route read the first, another
    the last).

    Raises:
        SchemaError: ERR_SCHEMA naming the parameter.
    """
    for name in names:
        given = params.get(name) or ()
        if len(given) > 1:
            raise SchemaError(
                f"{name} is given {len(given)} times; give it once", path=name
            )


def body_text(raw: bytes) -> str:
    """Return a request body as text.

    Raises:
        DecodeError: ERR_CORRUPT when it is not UTF-8, naming the byte.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(
            f"the body is not UTF-8: byte {exc.start} is {raw[exc.start]:#04x}",
            path="$",
        ) from None


def grain_body(content_type: str, raw: bytes) -> bytes | dict[str, Any]:
    """Return a grain from a request body: a raw blob (of type :data:`GRAIN_TYPE`),
    or JSON fields as export writes them.

    Raises:
        SchemaError: ERR_SCHEMA for JSON that is not one grain's fields.
        DecodeError: ERR_CORRUPT for a body that is not UTF-8.
    """
    if content_type.startswith(GRAIN_TYPE):
        return raw
    item, index = loads_json_grain(body_text(raw))
    if index is not None or not isinstance(item, dict | bytes):
        raise SchemaError("expected one grain as a JSON object of fields", path="$")
    return item


def json_body(raw: bytes) -> dict[str, Any]:
    """Return a request body's JSON object (an empty body is ``{}``).

    Raises:
        SchemaError: ERR_SCHEMA for a body that is not a JSON object; ERR_RANGE
            for an integer past Python's 4300-digit limit.
        DecodeError: ERR_CORRUPT for a body that is not UTF-8, or an object
            with a key given twice.
    """
    text = body_text(raw)
    try:
        body = json.loads(text or "{}", object_pairs_hook=unique_keys)
    except DecodeError:
        raise  # a key given twice, named
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # int("9" * 5000)
            raise SchemaError(
                "an integer with more digits than Python reads (4300); a grain's "
                "integers fit in 64 bits",
                code=ErrorCode.RANGE,
                path="$",
            ) from None
        raise SchemaError("the body is not JSON", path="$") from None
    if not isinstance(body, dict):
        raise SchemaError("expected a JSON object", path="$")
    return body


def finite_number(value: float, name: str) -> float:
    """Return a JSON number as a finite float (JSON's integers have no size limit).

    Raises:
        SchemaError: ERR_RANGE past a float's range, ERR_FLOAT_INVALID for NaN
            or an infinity.
    """
    try:
        number = float(value)
    except OverflowError:
        raise SchemaError(
            f"{name}: {str(value)[:20]}… is too large for a float",
            code=ErrorCode.RANGE,
            path=f"$.{name}",
        ) from None
    if not math.isfinite(number):
        raise SchemaError(
            f"{name} must be finite, found {value}",
            code=ErrorCode.FLOAT_INVALID,
            path=f"$.{name}",
        )
    return number


def whole_number(text: str | None, default: int, name: str = "limit") -> int:
    """Return query parameter ``name``'s whole number, or ``default`` when it is
    absent (at least 1 when the default is, else at least 0).

    Raises:
        SchemaError: ERR_SCHEMA for text that is not such a number, ERR_RANGE
            past 9 digits.
    """
    if text is None:
        return default
    least = 1 if default else 0
    if not (text.isascii() and text.isdigit()) or int(text[:12]) < least:
        raise SchemaError(
            f"expected a whole number of {least} or more, found {text[:40]!r}",
            path=name,
        )
    if len(text) > 9:
        raise SchemaError(
            f"expected at most 9 digits, found {len(text)}",
            code=ErrorCode.RANGE,
            path=name,
        )
    return int(text)


def param_millis(text: str, name: str) -> int:
    """A time given as query parameter ``name`` (:func:`oms_rdf.times.to_millis`).

    Raises:
        SchemaError: as ``to_millis``, naming the parameter as its path.
    """
    return _named(to_millis, text, name)


def param_span(text: str, name: str) -> tuple[int | None, int | None]:
    """A range given as query parameter ``name``, ``START/END``
    (:func:`oms_rdf.times.span_millis`).

    Raises:
        SchemaError: as ``span_millis``, naming the parameter as its path.
    """
    return _named(span_millis, text, name)


def _named(read: Callable[[str, str], T], text: str, name: str) -> T:
    try:
        return read(text, name)
    except SchemaError as exc:
        raise SchemaError(exc.message, code=exc.code, path=name) from None


def form_params(text: str, where: str) -> dict[str, list[str]]:
    """The parameters of a URL's query or a form, each name's values in order.

    Raises:
        DecodeError: ERR_CORRUPT when a %-escape is not UTF-8.
    """
    try:
        return parse_qs(text, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise DecodeError(f"the {where}'s %-escapes are not UTF-8", path="$") from None


def check_url_query(raw: bytes) -> None:
    """Refuse a URL query whose %-escapes are not UTF-8, which Starlette would
    read as U+FFFD (a subject no belief has, answered as if asked).

    Raises:
        DecodeError: ERR_CORRUPT.
    """
    form_params(raw.decode("latin-1"), "URL")
