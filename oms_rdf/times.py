"""Times as the library takes them: one rule for every time argument.

Every ``valid_at``, ``as_of``, ``at`` and ``now`` -- given to the library, on the
command line (``--valid-at``, ``--as-of``, ``--at``, ``--now``) or over HTTP
(``?valid_at=``, ``?as_of=``) -- goes through :func:`to_millis`, so one text means
one time everywhere. It takes:

* an ``int`` or a NumPy integer: epoch milliseconds (its type says so);
* a ``datetime``: an aware one is its instant; a naive one is UTC, the same rule
  as text without a zone (one rule: no zone given means UTC, never local time);
* a ``pandas.Timestamp`` (naive: UTC) and a ``numpy.datetime64`` (UTC, as NumPy
  reads it), floored to the millisecond; ``NaT`` is refused. Neither library is
  imported unless the value is one of its types;
* a ``date``: its midnight, UTC;
* text, which is read by this rule:

  - ISO 8601: ``2024`` (a year: its first instant), ``2024-06`` (a month),
    ``2024-06-01`` or ``20240601`` (a day), ``2024-06-01T12:00:00Z``,
    ``2024-06-01T12:00:00.250+02:00``, ``2024-06-01 12:00``. Text without a zone
    is UTC; ``Z`` and ``z`` are UTC.
  - Epoch milliseconds, written ``ms:N`` (any whole number ``N``, e.g.
    ``ms:1717243200000`` or ``ms:0``), or bare digits when there are at least 11 of
    them, optionally after ``-`` (every instant from 1970-04-26T17:46:40Z on has
    13). A shorter bare number is refused rather than guessed: ``2022`` is the
    year and ``20220601`` the day; ``1717243200`` (10 digits) is most likely epoch
    *seconds*, and ``202206`` is not ISO 8601 (it reads as YYMMDD).

  Anything else is refused with ERR_SCHEMA, which says what was expected and what
  was found. Times outside years 1-9999 (what an ``xsd:dateTime`` writes) are
  ERR_RANGE.

>>> to_millis("2024-01-01")
1704067200000
>>> to_millis("2024")
1704067200000
>>> to_millis("2024-01-01T01:00:00+01:00")
1704067200000
>>> to_millis("1704067200000") == to_millis("ms:1704067200000") == 1704067200000
True
>>> to_millis("202401", "valid_at")
Traceback (most recent call last):
  ...
oms_rdf.errors.SchemaError: ERR_SCHEMA: valid_at: expected ISO 8601 ...
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime
from typing import Any

from .errors import ErrorCode, SchemaError

__all__ = [
    "MAX_MS",
    "MIN_MS",
    "TimeLike",
    "iso",
    "iso_fields",
    "moment",
    "span_millis",
    "to_millis",
]

TimeLike = int | datetime | date | str
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The times an xsd:dateTime can write: years 1 to 9999.
MIN_MS = -62_135_596_800_000
MAX_MS = 253_402_300_799_999
# The fewest digits a bare number needs to be read as epoch milliseconds: 10**10 ms
# is 1970-04-26, and no ISO 8601 date has 11 digits or more (a year has 4, a day 8).
MIN_BARE_MS_DIGITS = 11

EXPECTED = (
    "expected ISO 8601 (2024, 2024-06, 2024-06-01, 2024-06-01T12:00:00Z; "
    "no zone means UTC) or epoch milliseconds (ms:1717243200000, or bare digits, "
    f"at least {MIN_BARE_MS_DIGITS} of them)"
)
_NUMBER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})", re.ASCII)


def to_millis(value: TimeLike, name: str = "time") -> int:
    """Return a time argument as epoch milliseconds (UTC), by the module's rule.

    Raises:
        SchemaError: ERR_SCHEMA for NaT, text that is neither ISO 8601
            nor epoch milliseconds as the rule writes them (a bare number shorter
            than 11 digits other than a year or YYYYMMDD), or another type;
            ERR_RANGE for a time outside years 1-9999.
    """
    module = type(value).__module__
    if type(value) is int:
        ms = value
    elif isinstance(value, str):
        ms = _text_ms(value, name)
    elif module.startswith("numpy"):
        ms = _numpy_ms(value, name)
    elif module.startswith("pandas"):
        ms = _pandas_ms(value, name)
    elif isinstance(value, datetime):
        ms = _ms_of(value if value.tzinfo else value.replace(tzinfo=UTC))
    elif isinstance(value, date):
        ms = _ms_of(datetime(value.year, value.month, value.day, tzinfo=UTC))
    else:
        raise SchemaError(
            f"{name}: expected epoch milliseconds (int), a datetime, a date or text; "
            f"found {type(value).__name__}",
            code=ErrorCode.SCHEMA,
        )
    if not MIN_MS <= ms <= MAX_MS:
        raise SchemaError(
            f"{name}: {value!r} is outside years 1-9999", code=ErrorCode.RANGE
        )
    return ms


def _numpy_ms(value: Any, name: str) -> int:
    """A NumPy integer (epoch ms) or datetime64 (UTC), floored to the millisecond."""
    import numpy as np

    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.datetime64):
        if np.isnat(value):
            raise SchemaError(
                f"{name}: expected a time; found NaT", code=ErrorCode.SCHEMA
            )
        unit, count = np.datetime_data(value.dtype)
        per_ms = _SUB_MS.get(unit)
        if per_ms is None:  # ms or coarser: exact in milliseconds
            return int(value.astype("datetime64[ms]").astype(np.int64))
        return int(value.astype(np.int64)) * count // per_ms
    raise SchemaError(
        f"{name}: expected epoch milliseconds (int), a datetime, a date or text; "
        f"found numpy {type(value).__name__}",
        code=ErrorCode.SCHEMA,
    )


_SUB_MS = {"us": 1_000, "ns": 1_000_000, "ps": 10**9, "fs": 10**12, "as": 10**15}


def _pandas_ms(value: Any, name: str) -> int:
    """A pandas Timestamp (naive: UTC), floored to the millisecond."""
    import pandas as pd

    if isinstance(value, pd.Timestamp):
        return int(value.value) // 1_000_000  # ns since the epoch, UTC
    if value is pd.NaT:
        raise SchemaError(f"{name}: expected a time; found NaT", code=ErrorCode.SCHEMA)
    raise SchemaError(
        f"{name}: expected epoch milliseconds (int), a datetime, a date or text; "
        f"found pandas {type(value).__name__}",
        code=ErrorCode.SCHEMA,
    )


def span_millis(text: str, name: str = "range") -> tuple[int | None, int | None]:
    """Return a range written as text, ``START/END`` (ISO 8601's interval form),
    as epoch milliseconds; ``..`` or nothing at an end leaves it open.

    For the command line and HTTP, where a range is one value
    (``--valid-during``, ``?valid_during=``); each end is read by :func:`to_millis`
    (no time holds a ``/``).

    >>> span_millis("2024-01-01/2025-01-01")
    (1704067200000, 1735689600000)
    >>> span_millis("../ms:0")
    (None, 0)

    Raises:
        SchemaError: ERR_SCHEMA for text without exactly one ``/``, or an end
            that is no time; ERR_RANGE as :func:`to_millis`, and for a range
            that ends where or before it begins.
    """
    ends = text.split("/")
    if len(ends) != 2:
        raise SchemaError(
            f"{name}: expected a range START/END (ISO 8601 or epoch ms at each "
            f"end, .. or nothing for an open end, e.g. 2024-01-01/..); found {text!r}",
            code=ErrorCode.SCHEMA,
        )
    start, end = (
        None if end.strip() in ("", "..") else to_millis(end, name) for end in ends
    )
    if start is not None and end is not None and end <= start:
        raise SchemaError(
            f"{name}: a range [{start}, {end}) holds no time; expected its end "
            "after its start",
            code=ErrorCode.RANGE,
        )
    return start, end


def iso_fields(fields: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """A grain's fields as JSON gives them, with the text of its time fields
    (``names``: created_at, valid_from, ...) read by :func:`to_millis`.

    For JSON, which has no datetime: where a Python caller gives a datetime, a
    JSON caller may give ISO 8601 text. Only text is read (an int stays as it
    is), and only at the top level, where the time fields are; the fields of a
    blob are never touched.

    Raises:
        SchemaError: ERR_SCHEMA (at the field) for text that is no time.
    """
    out = dict(fields)
    for name in names:
        value = out.get(name)
        if isinstance(value, str):
            try:
                out[name] = to_millis(value, name)
            except SchemaError as exc:
                raise SchemaError(exc.message, code=exc.code, path=name) from None
    return out


def moment(ms: int) -> datetime:
    """Epoch milliseconds as an aware UTC datetime, exactly (no float rounding).

    >>> moment(1704067200123).isoformat()
    '2024-01-01T00:00:00.123000+00:00'
    """
    return EPOCH + ms * _MS


def iso(ms: int) -> str:
    """Epoch milliseconds as ISO 8601 text in UTC, to the millisecond.

    >>> iso(1704067200000)
    '2024-01-01T00:00:00.000Z'
    """
    return moment(ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text_ms(text: str, name: str) -> int:
    stripped = text.strip()
    if stripped[:3].lower() == "ms:":
        number = stripped[3:].strip()
        if not _NUMBER.fullmatch(number):
            raise _refused(name, text, "ms: takes a whole number of milliseconds")
        return int(number)
    if _NUMBER.fullmatch(stripped):
        return _number_ms(stripped, text, name)
    if stripped.startswith("@") and _NUMBER.fullmatch(stripped[1:]):
        # GNU date reads @N as epoch seconds: say which unit we mean instead.
        raise _refused(name, text, f"for epoch milliseconds write ms:{stripped[1:]}")
    if not stripped.isprintable():  # fromisoformat stops at a NUL: the rest unread
        raise _refused(name, text, "a time holds no control characters")
    month = _MONTH.fullmatch(stripped)
    if month:  # datetime.fromisoformat takes no YYYY-MM
        return _ms_of(_utc(name, text, int(month[1]), int(month[2])))
    try:
        when = datetime.fromisoformat(stripped.replace("z", "Z"))
    except ValueError:
        raise _refused(name, text) from None
    return _ms_of(when if when.tzinfo else when.replace(tzinfo=UTC))


def _number_ms(number: str, text: str, name: str) -> int:
    """A bare number: a year (4 digits), a day (YYYYMMDD), or epoch ms (11+ digits)."""
    digits = number.lstrip("+-")
    if number[0] != "+" and len(digits) >= MIN_BARE_MS_DIGITS:
        return int(number)
    if number == digits and len(digits) == 4:
        return _ms_of(_utc(name, text, int(digits)))
    if number == digits and len(digits) == 8:
        day = int(digits[4:6]), int(digits[6:])
        return _ms_of(_utc(name, text, int(digits[:4]), *day))
    plural = "s" * (len(digits) != 1)
    hint = (
        f"a bare number of {len(digits)} digit{plural} is neither a year, YYYYMMDD "
        "nor epoch milliseconds"
    )
    if len(digits) == 10:
        hint += f"; 10 digits look like epoch seconds, in milliseconds {digits}000"
    elif len(digits) == 6:
        hint += "; for a month write YYYY-MM"
    raise _refused(name, text, f"{hint}; for epoch milliseconds write ms:{number}")


def _utc(name: str, text: str, year: int, month: int = 1, day: int = 1) -> datetime:
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        raise _refused(name, text) from None


def _refused(name: str, text: str, hint: str | None = None) -> SchemaError:
    if _YEAR_OUTSIDE.match(text.strip()):  # a date, of a year xsd:dateTime lacks
        return SchemaError(
            f"{name}: {text!r} is outside years 1-9999", code=ErrorCode.RANGE
        )
    why = f" ({hint})" if hint else ""
    return SchemaError(
        f"{name}: {EXPECTED}; found {text!r}{why}", code=ErrorCode.SCHEMA
    )


# A date (a year and a month at least) of year 0, a negative year, or a year of
# five digits or more. (A bare "0000" or "-2022" is no date: ERR_SCHEMA.)
_YEAR_OUTSIDE = re.compile(r"(?:0000|-[0-9]{4,}|\+?[0-9]{5,})-[0-9]{2}", re.ASCII)


def _ms_of(when: datetime) -> int:
    return (when - EPOCH) // _MS


_MS = datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC) - EPOCH
