"""The index state of a grain, and the kinds of values the store takes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import times
from ..codec.grain import Grain, namespace_of
from ..codec.signing import SigningKey
from ..errors import ErrorCode, QueryError, SchemaError, TimeRangeError

GrainLike = Grain | Mapping[str, Any] | bytes


TimeLike = times.TimeLike | None  # a time argument; None is the store's now


CACHE_SIZE = 65_536  # decoded grains kept by GrainStore.get


STATUSES = ("active", "superseded", "retracted")


VERIFICATIONS = ("unverified", "verified", "disputed", "contradicted")


# OMS 1.6 spellings of verification status, accepted as synonyms.
VERIFICATION_ALIASES = {"contested": "contradicted"}


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexState:
    """The index layer of one grain: what the store knows about it beside the blob."""

    address: str
    status: str  # active | superseded | retracted
    verification: str  # unverified | verified | disputed | contradicted
    superseded_by: str | None = None
    split_into: tuple[str, ...] = ()  # written in its place over portions of valid time
    system_to: int | None = None  # epoch ms the grain stopped being current
    voided_at: int | None = None  # epoch ms of a retraction or contradiction
    invalidation_type: str | None = None
    reason: str | None = None
    initiator: str | None = None
    signed_by: str | None = None  # DID of a verified COSE signature over the grain
    log_ratio: float = 0.0  # SPRT log-likelihood ratio from evidence
    sprt_status: str = "accumulating"  # accumulating | promoted | demoted
    sprt_entered: frozenset[str] = frozenset()  # each state is entered at most once
    effective_confidence: float | None = None  # set once evidence has adjusted it
    pending_erasure: int | None = None  # epoch ms its consent was withdrawn
    conflicts_with: tuple[str, ...] = ()  # disputed rivals on a functional relation
    # grains whose subtree or lineage policy reached it through a grain since erased
    protected_by: tuple[str, ...] = ()
    subtree_hops: tuple[str, ...] = ()  # "HEX N": how far up each subtree one is

    @property
    def is_current(self) -> bool:
        """Whether the grain is current: active, not closed, not contradicted."""
        return self.system_to is None

    @property
    def kind(self) -> str:
        """How a timeline draws the grain: ``retracted`` (or contradicted),
        ``current``, or ``superseded`` (it still describes the past)."""
        if self.status == "retracted" or self.voided_at is not None:
            return "retracted"
        return "current" if self.is_current else "superseded"


@dataclass(frozen=True, slots=True)
class Signature:
    """A verified COSE_Sign1 envelope of a grain, and who signed it."""

    envelope: bytes
    did: str


def millis_or_now(value: TimeLike, clock: Callable[[], int], name: str = "time") -> int:
    """Return a time argument as epoch ms; None is ``clock()``, the store's now.

    Raises:
        SchemaError: ERR_SCHEMA for a value :func:`oms_rdf.times.to_millis`
            refuses, naming the argument ``name``.

    >>> millis_or_now(None, lambda: 7), millis_or_now("1970-01-01T00:00:01Z", lambda: 7)
    (7, 1000)
    """
    return clock() if value is None else times.to_millis(value, name)


def spans_of(
    times_given: tuple[Any, Any, Any, Any], clock: Callable[[], int]
) -> tuple[tuple[int | None, int | None], tuple[int | None, int | None] | None]:
    """The valid and system ranges of a range question, as epoch ms, from its
    ``(valid_during, system_during, valid_at, as_of)``: a missing valid range
    is the one millisecond of ``valid_at`` (default now); a missing system
    range is None (the caller's point ``as_of``).

    Raises:
        QueryError: ERR_QUERY for a point and a range on one axis.
        TimeRangeError, SchemaError: as :func:`span_of`.
    """
    valid_during, system_during, valid_at, as_of = times_given
    for point, span, axis in (
        (valid_at, valid_during, "valid_at with valid_during"),
        (as_of, system_during, "as_of with system_during"),
    ):
        if point is not None and span is not None:
            raise QueryError(f"expected a point or a range on each axis; found {axis}")
    valid: tuple[int | None, int | None]
    if valid_during is None:  # system time's range at one valid time
        at = millis_or_now(valid_at, clock, "valid_at")
        valid = (at, None if at >= times.MAX_MS else at + 1)
    else:
        valid = span_of(valid_during, clock, "valid_during")
    system = (
        None
        if system_during is None
        else span_of(system_during, clock, "system_during")
    )
    return valid, system


def span_of(
    pair: Any, clock: Callable[[], int], name: str
) -> tuple[int | None, int | None]:
    """Return a range argument ``(start, end)``, half-open, as epoch ms (None:
    open at that end).

    Raises:
        QueryError: ERR_QUERY for a value that is not a pair.
        SchemaError: as :func:`millis_or_now`.
        TimeRangeError: ERR_RANGE for a range that holds no time: one that
            ends where or before it begins.

    >>> span_of((None, "1970-01-01T00:00:01Z"), lambda: 7, "valid_during")
    (None, 1000)
    """
    if not isinstance(pair, tuple | list) or len(pair) != 2:
        raise QueryError(f"{name}: a range is (start, end); found {pair!r}")
    start, end = (None if t is None else millis_or_now(t, clock, name) for t in pair)
    if start is not None and end is not None and end <= start:
        raise TimeRangeError(
            f"{name}: a range [{start}, {end}) holds no time; expected its end "
            "after its start"
        )
    return start, end


def same_claim(a: Grain, b: Grain) -> bool:
    """Return whether two grains make the same claim: subject, relation, namespace."""
    return bool(
        a.get("subject") == b.get("subject")
        and a.get("relation") == b.get("relation")
        and namespace_of(a.fields) == namespace_of(b.fields)
    )


def check_texts(**arguments: object) -> None:
    """Refuse an argument that is text or None by contract, and is neither
    (``reason=5``, ``by=b"did"``): named, before anything is read or written.

    Raises:
        SchemaError: ERR_SCHEMA naming the argument.
    """
    for name, value in arguments.items():
        if value is not None and not isinstance(value, str):
            raise SchemaError(
                f"{name}: expected text or None; found {type(value).__name__} "
                f"{_shown(value)}"
            )


def check_many(values: object, name: str) -> None:
    """Refuse a collection argument that is none (``retract_all(None)``), or text,
    which would be taken a character at a time.

    Raises:
        SchemaError: ERR_SCHEMA naming the argument.
    """
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise SchemaError(
            f"{name}: expected a collection (a list, a tuple, ...); found "
            f"{type(values).__name__} {_shown(values)}"
        )


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_signing(signer: object, auth: object) -> None:
    """Refuse a ``signer`` that is no signing key, and co-signatures (``auth``)
    that are not a collection of COSE_Sign1 envelopes (bytes): text would be
    written into the new grain a character at a time.

    Raises:
        SchemaError: ERR_SCHEMA naming the argument.
    """
    if signer is not None and not isinstance(signer, SigningKey):
        raise SchemaError(
            f"signer: expected a SigningKey (oms_rdf.codec.signing.generate_key()); "
            f"found {type(signer).__name__}"
        )
    check_many(auth, "auth")
    for item in auth:  # type: ignore[attr-defined]
        if not isinstance(item, bytes):
            raise SchemaError(
                f"auth: expected COSE_Sign1 envelopes (bytes); found "
                f"{type(item).__name__} {_shown(item)}"
            )


def check_not_before(when: int, since: int, doing: str) -> None:
    """Refuse a change dated before its grain entered the system (at ``since``):
    the store did not hold it then, so no past answer may say it changed.

    Raises:
        TimeRangeError: ERR_RANGE.
    """
    if when < since:
        raise TimeRangeError(
            f"cannot {doing} at {when}, before the grain entered the system at {since}",
            code=ErrorCode.RANGE,
        )
