"""Grain: an immutable, verified OMS grain, and the Belief(...) constructor.

A :class:`Grain` is its canonical blob. The address, the header and the decoded
fields are derived from the blob once, when the grain is made, and never change.

>>> g = Belief("alice", "works_at", "Acme", 0.9, created_at=1737000000000)
>>> g.type, g.fields["object"], len(g.address)
('belief', 'Acme', 64)
>>> Grain.from_blob(g.blob) == g
True
"""

from __future__ import annotations

import hashlib
import hmac
import html
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any, final

from . import DEFAULT_NAMESPACE, Header, decode, encode_fields, read_header, verify
from .header import blob_bytes

__all__ = [
    "DEFAULT_NAMESPACE",
    "Belief",
    "Grain",
    "namespace_of",
    "now_ms",
    "system_from",
]


def namespace_of(fields: Mapping[str, Any]) -> str:
    """Return the namespace a grain's ``fields`` name, or the default ``"shared"``.

    >>> namespace_of({"namespace": "work"}), namespace_of({})
    ('work', 'shared')
    """
    value: str = fields.get("namespace", DEFAULT_NAMESPACE)
    return value


def system_from(grain: Grain | Mapping[str, Any]) -> int:
    """Return when a grain (or its fields) entered the store's knowledge, in epoch ms.

    Its ``system_valid_from`` when it names one, else its ``created_at``: the
    start of its system time, and the default start of its valid time.

    >>> system_from({"created_at": 5}), system_from({"created_at": 5, "system_valid_from": 7})
    (5, 7)
    """
    value: int = grain.get("system_valid_from", grain["created_at"])
    return value


def now_ms() -> int:
    """Return the wall-clock time in epoch milliseconds."""
    return time.time_ns() // 1_000_000


def _thaw(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_thaw(v) for v in value]
    return value


@final
class Grain:
    """An immutable grain: canonical blob, content address and decoded fields.

    Make one with :meth:`from_dict`, :meth:`from_blob` or :func:`Belief`. Two grains
    are equal when their addresses are.
    """

    __slots__ = ("_fields", "_header", "address", "blob")

    address: str
    blob: bytes
    _fields: Mapping[str, Any] | None
    _header: Header

    def __init__(
        self, blob: bytes, fields: dict[str, Any] | None, address: str
    ) -> None:
        """Wrap an already validated blob; use the ``from_*`` constructors instead.

        ``fields`` None defers decoding to the first access: for blobs that were
        validated when they were stored and whose address was just re-verified.
        """
        object.__setattr__(self, "blob", blob)
        object.__setattr__(self, "address", address)
        object.__setattr__(
            self, "_fields", None if fields is None else MappingProxyType(fields)
        )
        object.__setattr__(self, "_header", read_header(blob))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Grain is immutable; cannot set {name!r}")

    @classmethod
    def from_dict(
        cls,
        fields: Mapping[str, Any],
        /,
        *,
        type_byte: int | None = None,
        signed: bool = False,
    ) -> Grain:
        """Encode ``fields`` (full names) into a grain; ``signed`` sets header bit 0.

        Raises:
            EncodeError, SchemaError: as :func:`oms_rdf.encode`.
        """
        blob, canonical = encode_fields(fields, type_byte=type_byte, signed=signed)
        return cls(blob, canonical, hashlib.sha256(blob).hexdigest())

    @classmethod
    def stored(cls, blob: bytes, address: str, /) -> Grain:
        """A grain read back from a store: its address is verified, decoding waits.

        The store validated the blob when it was put; reading it again only
        re-checks that the bytes still hash to the address (constant-time), and
        the fields are decoded on first access.

        Raises:
            IntegrityError: ERR_INTEGRITY when the bytes no longer hash to ``address``.
        """
        if not hmac.compare_digest(hashlib.sha256(blob).hexdigest(), address):
            verify(blob, address)  # raises with the full explanation
        return cls(blob, None, address)

    @classmethod
    def from_blob(cls, blob: bytes, /, *, address: str | None = None) -> Grain:
        """Decode and validate a blob; with ``address``, verify it first.

        The blob is kept byte for byte, header included, so the address never
        changes even when the header carries hints this reader does not derive.

        Raises:
            DecodeError, SchemaError: as :func:`oms_rdf.decode`.
            IntegrityError: ERR_INTEGRITY when ``address`` does not match.
        """
        blob = blob_bytes(blob)
        if address is not None:
            verify(blob, address)
        fields = decode(blob)
        return cls(blob, fields, address or hashlib.sha256(blob).hexdigest())

    @property
    def fields(self) -> Mapping[str, Any]:
        """The decoded fields by full name (read-only)."""
        fields = self._fields
        if fields is None:
            fields = MappingProxyType(decode(self.blob))
            object.__setattr__(self, "_fields", fields)
        return fields

    @property
    def type(self) -> str:
        """The type string exactly as written in the blob, e.g. ``"belief"``."""
        value: str = self.fields["type"]
        return value

    @property
    def type_byte(self) -> int:
        """The header type byte."""
        return self._header.type_byte

    @property
    def signed(self) -> bool:
        """Whether header flag bit 0 is set: the grain travels only inside COSE_Sign1."""
        return bool(self._header.flags & 0x01)

    @property
    def header(self) -> Header:
        """The unpacked 9-byte header."""
        return self._header

    @property
    def namespace(self) -> str:
        """The namespace, or the default ``"shared"`` when the grain names none."""
        return namespace_of(self.fields)

    @property
    def created_at(self) -> int:
        """Creation time in epoch milliseconds."""
        value: int = self.fields["created_at"]
        return value

    def get(self, name: str, default: Any = None) -> Any:
        """Return a field by full name, or ``default``."""
        return self.fields.get(name, default)

    def __getitem__(self, name: str) -> Any:
        return self.fields[name]

    def to_dict(self) -> dict[str, Any]:
        """Return a fresh, mutable copy of the fields by full name."""
        result: dict[str, Any] = _thaw(dict(self.fields))
        return result

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Grain) and other.address == self.address

    def __hash__(self) -> int:
        return hash(self.address)

    def __repr__(self) -> str:
        """The type, what the grain says (subject, relation, object, confidence), its address.

        >>> Belief("alice", "works_at", "Acme", 0.9, created_at=1)
        <Grain belief alice works_at 'Acme' conf=0.9 4360a7809e2f…>
        """
        said = " ".join(
            part
            for part in (
                self._text("subject"),
                self._text("relation"),
                repr(self.get("object")) if "object" in self.fields else "",
                f"conf={self.get('confidence')}" if "confidence" in self.fields else "",
            )
            if part
        )
        return f"<Grain {self.type} {said + ' ' if said else ''}{self.address[:12]}…>"

    def _repr_html_(self) -> str:
        """A grain as a small table in a notebook: address, then its fields."""
        cells = "".join(
            f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(repr(v))}</td></tr>"
            for k, v in self.fields.items()
        )
        return (
            f"<table><caption>{html.escape(self.type)} "
            f"<code>{self.address}</code></caption>{cells}</table>"
        )

    def _text(self, name: str) -> str:
        value = self.get(name)
        return "" if value is None else str(value)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Grain.from_blob, (self.blob,))


def Belief(  # noqa: N802 - a constructor function, named like the grain type
    subject: str,
    relation: str,
    object: Any,
    confidence: float,
    *,
    created_at: int | datetime | None = None,
    source_type: str | None = None,
    namespace: str | None = None,
    valid_from: int | datetime | None = None,
    valid_to: int | datetime | None = None,
    system_valid_from: int | datetime | None = None,
    author_did: str | None = None,
    derived_from: Sequence[str] | None = None,
    provenance_chain: Sequence[Mapping[str, Any]] | None = None,
    invalidation_policy: Mapping[str, Any] | None = None,
    importance: float | None = None,
    context: Mapping[str, Any] | None = None,
    structural_tags: Sequence[str] | None = None,
    user_id: str | None = None,
    temporal_type: str | None = None,
    supersession_justification: str | None = None,
    related_to: Sequence[Mapping[str, Any]] | None = None,
    signed: bool = False,
    **extra: Any,
) -> Grain:
    """Make a Belief grain (type string ``"belief"``, type byte 0x01).

    Only the fields given are written: spec defaults are never inserted, because
    they would change the bytes and so the address. ``created_at`` defaults to the
    current wall-clock time in epoch milliseconds when omitted. Any other field of
    the spec (or an unknown one) can be passed as a keyword. ``signed=True`` sets the
    header's signed flag, for grains that will travel in a COSE_Sign1 envelope.

    Raises:
        EncodeError, SchemaError: as :func:`oms_rdf.encode`.

    >>> Belief("user", "prefers", "dark mode", 1, created_at=0).fields["confidence"]
    1.0
    """
    fields: dict[str, Any] = {
        "type": "belief",
        "subject": subject,
        "relation": relation,
        "object": object,
        "confidence": confidence,
        "created_at": now_ms() if created_at is None else created_at,
        "source_type": source_type,
        "namespace": namespace,
        "valid_from": valid_from,
        "valid_to": valid_to,
        "system_valid_from": system_valid_from,
        "author_did": author_did,
        "derived_from": derived_from,
        "provenance_chain": provenance_chain,
        "invalidation_policy": invalidation_policy,
        "importance": importance,
        "context": context,
        "structural_tags": structural_tags,
        "user_id": user_id,
        "temporal_type": temporal_type,
        "supersession_justification": supersession_justification,
        "related_to": related_to,
        **extra,
    }
    return Grain.from_dict(fields, signed=signed)
