"""Times as the library takes them: one rule for every time argument.

Every ``valid_at``, ``as_of`` and ``at`` takes epoch milliseconds (int), an aware
``datetime``, a ``date`` (midnight UTC), or an ISO 8601 string (a date, or a date and
time; without a zone it is UTC, as on the command line; all digits: epoch ms). A naive ``datetime`` is
refused: in Python it means "local time", which a shared store cannot guess.

>>> to_millis("2024-01-01")
1704067200000
>>> to_millis("2024-01-01T01:00:00+01:00")
1704067200000
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from .errors import ErrorCode, SchemaError

__all__ = ["MAX_MS", "MIN_MS", "TimeLike", "iso", "moment", "to_millis"]

TimeLike = int | datetime | date | str
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The times an xsd:dateTime can write: years 1 to 9999.
MIN_MS = -62_135_596_800_000
MAX_MS = 253_402_300_799_999


def to_millis(value: TimeLike, name: str = "time") -> int:
    """Return a time argument as epoch milliseconds (UTC).

    Raises:
        SchemaError: ERR_SCHEMA for a naive datetime, text that is not ISO 8601, or
            another type; ERR_RANGE for a time outside years 1-9999.
    """
    if type(value) is int:
        ms = value
    elif isinstance(value, datetime):
        if value.tzinfo is None:
            raise SchemaError(
                f"{name}: a naive datetime has no time zone; give an aware one, e.g. "
                "datetime(2024, 1, 1, tzinfo=timezone.utc)",
                code=ErrorCode.SCHEMA,
            )
        ms = _ms_of(value)
    elif isinstance(value, date):
        ms = _ms_of(datetime(value.year, value.month, value.day, tzinfo=UTC))
    elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
        ms = int(value)  # epoch milliseconds written out, as on the command line
    elif isinstance(value, str):
        ms = _ms_of(_parse(value, name))
    else:
        raise SchemaError(
            f"{name}: expected epoch milliseconds, a datetime, a date or ISO 8601 "
            f"text; found {type(value).__name__}",
            code=ErrorCode.SCHEMA,
        )
    if not MIN_MS <= ms <= MAX_MS:
        raise SchemaError(
            f"{name}: {value!r} is outside years 1-9999", code=ErrorCode.RANGE
        )
    return ms


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


def _parse(text: str, name: str) -> datetime:
    stripped = text.strip()
    try:
        when = datetime.fromisoformat(stripped.replace("z", "Z"))
    except ValueError:
        raise SchemaError(
            f"{name}: {text!r} is not ISO 8601 (2024-01-15 or 2024-01-15T10:00:00Z)",
            code=ErrorCode.SCHEMA,
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _ms_of(when: datetime) -> int:
    return (when - EPOCH) // _MS


_MS = datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC) - EPOCH
