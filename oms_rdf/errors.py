"""Errors raised by oms_rdf: one root, one spec code per failure.

Every failure raised by this package is an :class:`OmsError`. Its ``code`` names
the rule that failed (the OMS spec's error codes, §19, plus three of ours for the
store) and ``path`` says where in the grain, in ``$.field[0].key`` form::

    OmsError                     .code, .path
    ├── DecodeError (ValueError)  the bytes are not a well-formed grain blob
    ├── EncodeError (ValueError)  a value cannot be written canonically
    ├── SchemaError (ValueError)  a grain breaks a field rule of its type
    ├── IntegrityError            a content address does not match or is malformed
    ├── SignatureError            a signature, key or DID is invalid or unsupported
    ├── PolicyError               a protection policy refuses the operation
    │   └── TimeRangeError (ValueError)  a time or portion of valid time is out of range
    ├── NotFoundError (KeyError)  no grain with that address in the store
    ├── QueryError (ValueError)   a SPARQL query or update is malformed or not allowed
    └── StoreError                the storage backend failed

>>> try:
...     raise DecodeError("blob has 3 bytes, need at least 10", code=ErrorCode.TOO_SHORT)
... except OmsError as exc:
...     print(exc.code, "|", exc)
ERR_TOO_SHORT | ERR_TOO_SHORT: blob has 3 bytes, need at least 10
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar

__all__ = [
    "LONGEST_MESSAGE",
    "ConflictWarning",
    "DecodeError",
    "EncodeError",
    "ErrorCode",
    "IntegrityError",
    "NotFoundError",
    "OmsError",
    "PolicyError",
    "QueryError",
    "SchemaError",
    "SignatureError",
    "StoreError",
    "TimeRangeError",
]


class ErrorCode(StrEnum):
    """The error codes of the OMS specification (§19), plus the store's own."""

    TOO_SHORT = "ERR_TOO_SHORT"
    VERSION = "ERR_VERSION"
    CORRUPT = "ERR_CORRUPT"
    NOT_MAP = "ERR_NOT_MAP"
    NO_TYPE = "ERR_NO_TYPE"
    UNKNOWN_TYPE = "ERR_UNKNOWN_TYPE"
    SCHEMA = "ERR_SCHEMA"
    INTEGRITY = "ERR_INTEGRITY"
    HASH_FORMAT = "ERR_HASH_FORMAT"
    HASH_LENGTH = "ERR_HASH_LENGTH"
    RANGE = "ERR_RANGE"
    EMPTY = "ERR_EMPTY"
    FLOAT_INVALID = "ERR_FLOAT_INVALID"
    SIGNED_MISMATCH = "ERR_SIGNED_MISMATCH"
    SENSITIVITY_MISMATCH = "ERR_SENSITIVITY_MISMATCH"
    INVALIDATION_DENIED = "ERR_INVALIDATION_DENIED"
    EVIDENCE_REQUIRED = "ERR_EVIDENCE_REQUIRED"
    # Not in the OMS spec: failures of this store rather than of a grain.
    NOT_FOUND = "ERR_NOT_FOUND"
    SIGNATURE = "ERR_SIGNATURE"
    CONFLICT = "ERR_CONFLICT"
    STORE = "ERR_STORE"
    QUERY = "ERR_QUERY"


SPEC_CODES: frozenset[ErrorCode] = frozenset(
    c
    for c in ErrorCode
    if c
    not in (
        ErrorCode.NOT_FOUND,
        ErrorCode.CONFLICT,
        ErrorCode.STORE,
        ErrorCode.SIGNATURE,
        ErrorCode.QUERY,
    )
)


LONGEST_MESSAGE = 2000  # characters of an error's message; the rest is counted


class OmsError(Exception):
    """Root of every error raised by oms_rdf.

    Attributes:
        code: the spec error code of the rule that failed.
        path: where in the grain, e.g. ``$.provenance_chain[2].weight``, or None.
    """

    default_code: ClassVar[ErrorCode] = ErrorCode.CORRUPT

    def __init__(
        self, msg: str, *, code: ErrorCode | None = None, path: str | None = None
    ) -> None:
        self.code: ErrorCode = code if code is not None else self.default_code
        self.path: str | None = path
        if len(msg) > LONGEST_MESSAGE:  # a parser's message may quote its input whole
            more = f"… ({len(msg)} characters in all)"
            msg = msg[: LONGEST_MESSAGE - len(more)] + more  # as long as allowed
        self.message = msg
        text = f"{self.code}: {msg}"
        if path is not None:
            text += f" (at {path})"
        super().__init__(text)

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only constructor arguments need help to survive pickling.
        return (_rebuild, (type(self), self.message, self.code, self.path))


def _rebuild(
    cls: type[OmsError], msg: str, code: ErrorCode, path: str | None
) -> OmsError:
    return cls(msg, code=code, path=path)


class DecodeError(OmsError, ValueError):
    """The bytes are not a well-formed canonical grain blob."""

    default_code = ErrorCode.CORRUPT


class EncodeError(OmsError, ValueError):
    """A value cannot be written as canonical MessagePack."""

    default_code = ErrorCode.SCHEMA


class SchemaError(OmsError, ValueError):
    """A grain breaks a rule of its type: a field missing, empty, mistyped or out of range."""

    default_code = ErrorCode.SCHEMA


class IntegrityError(OmsError):
    """A content address is malformed or does not match the blob."""

    default_code = ErrorCode.INTEGRITY


class SignatureError(OmsError):
    """A signature does not verify, or a key, DID or envelope is not supported."""

    default_code = ErrorCode.SIGNATURE


class PolicyError(OmsError):
    """A protection policy (``invalidation_policy``) or revision rule refuses the operation."""

    default_code = ErrorCode.INVALIDATION_DENIED


class TimeRangeError(PolicyError, ValueError):
    """A time argument falls outside what the operation takes (ERR_RANGE).

    A portion of valid time that is empty or misses the grain's valid interval, a
    retraction dated before its grain entered the store, a successor older than
    the grain it supersedes. A caller's mistake, so a :class:`ValueError`; a
    revision rule refused it, so a :class:`PolicyError` as it always was.
    """

    default_code = ErrorCode.RANGE


class NotFoundError(OmsError, KeyError):
    """No grain with that address is in the store."""

    default_code = ErrorCode.NOT_FOUND

    def __str__(self) -> str:
        # KeyError would quote the message; keep the one-line form of OmsError.
        return Exception.__str__(self)


class QueryError(OmsError, ValueError):
    """A SPARQL query or update is malformed, or asks for what the store refuses."""

    default_code = ErrorCode.QUERY


class ConflictWarning(UserWarning):
    """A belief on a functional relation disagrees with a current one; both are disputed."""


class StoreError(OmsError):
    """The storage backend failed (I/O, lock, malformed SPARQL)."""

    default_code = ErrorCode.STORE
