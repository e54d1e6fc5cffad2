"""The 9-byte header, content addresses and their checks."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, NamedTuple

from ..errors import (
    DecodeError,
    ErrorCode,
    IntegrityError,
)

VERSION = 0x01


HEADER_SIZE = 9


MIN_BLOB = HEADER_SIZE + 1  # header + empty map


MAX_BLOB = 1 << 20
"""The largest blob written or read: 1 MiB (1,048,576 bytes), header included.

The spec's default device profile (extended, §18) recommends at most 1 MB a blob.
The bound is what keeps every backup restorable: the worst case of a blob's text
in an RDF export is seven times its size (a control character in a map is
``\\u0001`` in JSON and ``\\\\u0001`` in N-Quads), 7 MiB, under the 8 MiB a token
may take in pyoxigraph's JSON-LD parser and the 16 MiB a line may take in its
N-Quads, TriG and Turtle parsers. Larger content belongs outside the grain
(``content_refs``). Encoding and decoding refuse a larger blob with ERR_RANGE, so
``put``, ``put_many``, every import and HTTP refuse it too.
"""


def blob_bytes(blob: object, /) -> bytes:
    """A blob given as bytes, a bytearray or a memoryview, as bytes.

    Raises:
        DecodeError: ERR_CORRUPT for anything else (a list of numbers is no blob).
    """
    if type(blob) is bytes:
        return blob
    if not isinstance(blob, bytes | bytearray | memoryview):
        raise DecodeError(f"expected bytes, found {type(blob).__name__}")
    return bytes(blob)


def check_size(size: int, /) -> None:
    """Refuse a blob of ``size`` bytes above :data:`MAX_BLOB` (ERR_RANGE).

    >>> check_size(MAX_BLOB)
    >>> check_size(MAX_BLOB + 1)
    Traceback (most recent call last):
    ...
    oms_rdf.errors.DecodeError: ERR_RANGE: the blob is 1048577 bytes; a blob may be at most 1048576 bytes (1 MiB)
    """
    if size > MAX_BLOB:
        raise DecodeError(
            f"the blob is {size} bytes; a blob may be at most {MAX_BLOB} bytes (1 MiB)",
            code=ErrorCode.RANGE,
        )


DEFAULT_NAMESPACE = "shared"  # hashed into the header when `namespace` is absent


_HEX = frozenset("0123456789abcdef")


FLAG_SIGNED = 0x01


FLAG_ENCRYPTED = 0x02


FLAG_COMPRESSED = 0x04


FLAG_CONTENT_REFS = 0x08


FLAG_EMBEDDING_REFS = 0x10


FLAG_CBOR = 0x20


UNREADABLE = {
    FLAG_ENCRYPTED: "an encrypted payload (flag bit 1) needs the key; decrypt it first",
    FLAG_COMPRESSED: "a zstd-compressed payload (flag bit 2) is not supported",
    FLAG_CBOR: "a CBOR payload (flag bit 5) is not supported; only MessagePack",
}


# Tag prefix -> minimum sensitivity level in header bits 6-7 (spec §13).
_TAG_LEVELS = {"phi:": 3, "pii:": 2, "sec:": 2, "legal:": 2, "reg:": 1}


class Header(NamedTuple):
    """The nine header bytes of a blob, unpacked."""

    version: int
    flags: int
    type_byte: int
    ns_hash: int
    created_sec: int

    @property
    def sensitivity(self) -> int:
        """The two-bit sensitivity level: 0 public, 1 internal, 2 PII, 3 PHI."""
        return (self.flags >> 6) & 3


def read_header(blob: bytes, /) -> Header:
    """Unpack the header of a blob, checking its length and version.

    Raises:
        DecodeError: ERR_TOO_SHORT under 10 bytes; ERR_VERSION if byte 0 is not 0x01.

    >>> read_header(bytes.fromhex("010001a4d26968baa080")).created_sec
    1768471200
    """
    if len(blob) < MIN_BLOB:
        raise DecodeError(
            f"blob has {len(blob)} bytes; a grain needs at least {MIN_BLOB} "
            "(9-byte header + payload map)",
            code=ErrorCode.TOO_SHORT,
        )
    if blob[0] != VERSION:
        envelope = blob[0] == 0xD2 or blob[0] == 0x84  # CBOR tag 18, or its array
        hint = (
            " (these bytes look like a COSE_Sign1 envelope: put it, or open it "
            "with oms_rdf.codec.signing.verify_signature)"
            if envelope
            else ""
        )
        raise DecodeError(
            f"blob version byte is 0x{blob[0]:02x}; this reader supports 0x01{hint}",
            code=ErrorCode.VERSION,
            path="header[0]",
        )
    return Header(
        blob[0], blob[1], blob[2], int.from_bytes(blob[3:5]), int.from_bytes(blob[5:9])
    )


def content_address(blob: bytes, /) -> str:
    """Return the content address of a blob: lowercase hex SHA-256 of all its bytes.

    Raises:
        DecodeError: ERR_TOO_SHORT or ERR_VERSION when ``blob`` is no grain blob.

    >>> blob = bytes.fromhex("010001a4d26968baa080")
    >>> content_address(blob) == hashlib.sha256(blob).hexdigest()
    True
    """
    blob = blob_bytes(blob)
    if len(blob) < MIN_BLOB or blob[0] != VERSION:
        read_header(blob)  # raises with the reason
    return hashlib.sha256(blob).hexdigest()


def check_address(address: object, /, *, path: str = "address") -> str:
    """Return ``address`` if it is 64 lowercase hex digits, else raise.

    Raises:
        IntegrityError: ERR_HASH_LENGTH for a wrong length, ERR_HASH_FORMAT otherwise.
    """
    if not isinstance(address, str):
        raise IntegrityError(
            f"expected a content address string, found {type(address).__name__}",
            code=ErrorCode.HASH_FORMAT,
            path=path,
        )
    if len(address) != 64:
        raise IntegrityError(
            f"a content address has 64 hex digits; found {len(address)} in {address!r}",
            code=ErrorCode.HASH_LENGTH,
            path=path,
        )
    if not _HEX.issuperset(address):
        raise IntegrityError(
            f"a content address is lowercase hex; found {address!r}",
            code=ErrorCode.HASH_FORMAT,
            path=path,
        )
    return address


def verify(blob: bytes, address: str, /) -> None:
    """Check that ``address`` is the content address of ``blob`` (constant-time).

    A signature is checked by :func:`oms_rdf.codec.signing.verify_signature`.

    Raises:
        IntegrityError: ERR_HASH_LENGTH / ERR_HASH_FORMAT for a malformed address,
            ERR_INTEGRITY when the blob does not hash to it.
        DecodeError: ERR_TOO_SHORT / ERR_VERSION when ``blob`` is no grain blob.
    """
    actual = content_address(blob)
    # Equal to a hex digest means well-formed; only a mismatch needs the form checked.
    if (
        type(address) is str
        and address.isascii()
        and hmac.compare_digest(actual, address)
    ):
        return
    check_address(address)
    if not hmac.compare_digest(actual, address):
        raise IntegrityError(
            f"blob hashes to {actual}, expected {address}", code=ErrorCode.INTEGRITY
        )


@lru_cache(maxsize=4096)
def _ns_hash(namespace: str) -> bytes:
    return hashlib.sha256(namespace.encode()).digest()[:2]


def required_sensitivity(tags: Iterable[Any], /) -> int:
    """Return the lowest sensitivity level (header bits 6-7) ``tags`` allow (spec §13).

    >>> required_sensitivity(["pii:email", "reg:gdpr"]), required_sensitivity([])
    (2, 0)
    """
    level = 0
    for tag in tags:
        if isinstance(tag, str):
            for prefix, tag_level in _TAG_LEVELS.items():
                if tag.startswith(prefix) and tag_level > level:
                    level = tag_level
    return level


def header_for(
    fields: Mapping[str, Any], type_byte: int, *, signed: bool = False
) -> bytes:
    """Return the header this encoder derives for canonical ``fields``."""
    flags = FLAG_SIGNED if signed else 0
    if fields.get("content_refs"):
        flags |= FLAG_CONTENT_REFS
    if fields.get("embedding_refs"):
        flags |= FLAG_EMBEDDING_REFS
    tags = fields.get("structural_tags")
    if tags:
        flags |= required_sensitivity(tags) << 6
    namespace = fields.get("namespace", DEFAULT_NAMESPACE)
    ns = _ns_hash(namespace if isinstance(namespace, str) else DEFAULT_NAMESPACE)
    seconds: int = fields["created_at"] // 1000
    return bytes((VERSION, flags, type_byte)) + ns + seconds.to_bytes(4)
