"""Reading a container front to back, every part checked as it comes."""

from __future__ import annotations

import hashlib
import sys
from array import array
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

import msgpack

from ...codec import MAX_BLOB, decode
from ...codec.header import MIN_BLOB
from ...errors import DecodeError, ErrorCode, IntegrityError, OmsError
from ...times import to_millis
from .layout import (
    CODEC_ZSTD,
    ERASED_KEY,
    FLAG_COMPRESSED,
    FLAG_FIELD_MAP,
    FLAG_MANIFEST,
    HEADER_SIZE,
    MAGIC,
    REGION_LIMIT,
)
from .streams import HashingReader, TailReader, ZstdRegion

__all__ = ["MgReader", "read_mg"]


@dataclass
class MgReader:
    """Reads a container front to back, checking every part as it goes.

    ``blobs()`` yields each grain's bytes after decoding it (so a damaged grain
    fails with its own code, and its index and offset in the path); the footer is
    checked when the last byte has been read (ERR_INTEGRITY). ``check=False``
    skips the decoding (to read the manifest alone).

    Manifest entries that are tombstones (:data:`ERASED_KEY`) are not yielded:
    they are gathered into ``tombstones`` (address -> epoch ms of the erasure).
    """

    source: IO[bytes]
    progress: Callable[[int], object] | None = None
    count: int = 0
    flags: int = 0
    manifest: dict[str, dict[str, Any]] = field(default_factory=dict)
    check: bool = True
    tombstones: dict[str, int] = field(default_factory=dict)

    def blobs(self) -> Iterator[bytes]:
        """Yield every grain blob; the manifest is gathered into ``manifest``, and
        the footer checked, after the last."""
        for item in self.items():
            if isinstance(item, bytes):
                yield item
            else:
                self.manifest[item[0]] = item[1]

    def items(self) -> Iterator[bytes | tuple[str, dict[str, Any]]]:
        """Yield every grain blob in order, then each manifest entry as
        ``(address, fields)``, read as it comes; the footer is checked after the
        last. Memory holds the offset index and one grain or entry at a time."""
        digest = hashlib.sha256()
        stream = HashingReader(self.source, digest, self.progress)
        offsets, region = self._open(stream)
        for i in range(self.count - 1):
            size = offsets[i + 1] - offsets[i]
            yield self._grain(region.read_exact(size, f"grain {i}"), i, offsets[i])
        last, rest = _last_grain(region, stream, offsets)
        if last is not None:
            yield self._grain(last, self.count - 1, offsets[-1])
        if self.flags & FLAG_MANIFEST:
            for address, entry in rest.manifest():
                if ERASED_KEY in entry:
                    self.tombstones[address] = _erased(address, entry)
                else:
                    yield address, entry
        rest.end(bool(self.flags & FLAG_MANIFEST))
        stream.end()
        expected = digest.digest()
        if stream.footer != expected:
            raise IntegrityError(
                f"footer SHA-256 {stream.footer.hex()} does not match the content {expected.hex()}",
                code=ErrorCode.INTEGRITY,
                path="footer",
            )

    def _open(
        self, stream: HashingReader
    ) -> tuple[array[int], HashingReader | ZstdRegion]:
        """Read and check the header and the offset index; set ``flags`` and
        ``count``; return the offsets and the region the grains are read from."""
        header = stream.read_exact(HEADER_SIZE, "header")
        if header[:2] != MAGIC[:2]:
            raise DecodeError(
                f"not an .mg container: magic is {header[:3].hex()}, expected 4d4701",
                path="header[0]",
            )
        if header[2] != MAGIC[2]:
            raise DecodeError(
                f"container version {header[2]}; this reader supports 1",
                code=ErrorCode.VERSION,
                path="header[2]",
            )
        self.flags = header[3]
        self.count = int.from_bytes(header[4:8], "big")
        codec = header[9]
        if self.flags & FLAG_FIELD_MAP:
            raise DecodeError(
                "custom field maps (flag bit 3) are not supported", path="header[3]"
            )
        index = stream.read_exact(4 * self.count, "offset index")
        offsets = _offsets(index)
        compressed = bool(self.flags & FLAG_COMPRESSED)
        if compressed and codec != CODEC_ZSTD:
            raise DecodeError(
                f"compression codec 0x{codec:02x} is not supported (only zstd)",
                path="header[9]",
            )
        # Offsets are into the decompressed region when it is compressed.
        _check_offsets(offsets, 0 if compressed else HEADER_SIZE + 4 * self.count)
        if not compressed:
            return offsets, stream
        # The region holds the grains the table sizes and one last grain, so a
        # larger output is a decompression bomb; it is refused as it grows.
        limit = min(offsets[-1] + MAX_BLOB if offsets else 0, REGION_LIMIT)
        return offsets, ZstdRegion(stream, limit)

    def _grain(self, blob: bytes, index: int, offset: int) -> bytes:
        return _checked(blob, index, offset) if self.check else blob


def read_mg(
    source: IO[bytes],
    *,
    progress: Callable[[int], object] | None = None,
    check: bool = True,
) -> MgReader:
    """Return a reader over a container opened in binary mode."""
    return MgReader(source, progress, check=check)


def _last_grain(
    region: HashingReader | ZstdRegion, stream: HashingReader, offsets: array[int]
) -> tuple[bytes | None, TailReader]:
    """Read the last grain (None when there is none), and return it with the reader
    of what follows it. The last grain runs to the manifest or the footer: it ends
    where its MessagePack map ends."""
    count = len(offsets)
    if isinstance(region, ZstdRegion):
        tail = region.read_all()  # the frame ends: what follows is the manifest
        rest = TailReader(region.leftover, stream)
        last = _split_grain(tail, count - 1, offsets[-1]) if count else b""
        if len(last) != len(tail):
            raise DecodeError(
                f"{len(tail) - len(last)} bytes after the last grain in the "
                "compressed region",
                path="grain region",
            )
        return (last if count else None), rest
    rest = TailReader(b"", stream)
    return (rest.grain(count - 1, offsets[-1]) if count else None), rest


def _erased(address: str, entry: Mapping[str, Any]) -> int:
    """The erasure time of a tombstone entry, checked."""
    when = entry[ERASED_KEY]
    if len(entry) != 1 or type(when) is not int or when < 0:
        raise DecodeError(
            f"a tombstone entry holds only {ERASED_KEY}, the erasure's time in epoch "
            f"ms; found {dict(entry)!r}",
            path=f"manifest {address[:12]}…",
        )
    return to_millis(when, f"the tombstone of {address[:12]}…")


def _offsets(index: bytes) -> array[int]:
    """The offset table as unsigned 32-bit integers (4 bytes each, not a list)."""
    offsets = array("I")
    if offsets.itemsize != 4:  # pragma: no cover - every supported platform
        offsets = array("L")
    offsets.frombytes(index)
    if sys.byteorder == "little":
        offsets.byteswap()  # the file's are big-endian
    return offsets


def _check_offsets(offsets: array[int], start: int) -> None:
    """Refuse an offset table before any grain is read (or inflated).

    The first grain starts at ``start``, and each grain takes between 10 bytes
    (a header and an empty map) and :data:`MAX_BLOB`.
    """
    if offsets and offsets[0] != start:
        raise DecodeError(
            f"grain 0 starts at offset {offsets[0]}, expected {start}",
            path="index[0]",
        )
    for i in range(len(offsets) - 1):
        size = offsets[i + 1] - offsets[i]
        if size < MIN_BLOB:
            # A grain of 1 to 9 bytes is one too short to be a grain (spec §13);
            # offsets that do not ascend are a damaged index.
            raise DecodeError(
                f"offsets {offsets[i]} and {offsets[i + 1]} leave {size} bytes for "
                f"grain {i}; a grain has at least {MIN_BLOB}",
                code=ErrorCode.TOO_SHORT if size > 0 else ErrorCode.CORRUPT,
                path=f"index[{i + 1}]",
            )
        if size > MAX_BLOB:
            raise DecodeError(
                f"offsets {offsets[i]} and {offsets[i + 1]} give grain {i} {size} "
                f"bytes; a grain may have at most {MAX_BLOB} (1 MiB)",
                code=ErrorCode.RANGE,
                path=f"index[{i + 1}]",
            )


def _split_grain(data: bytes, index: int, offset: int) -> bytes:
    """Return the grain at the start of ``data``: 9 header bytes and one map."""
    # The buffer may hold the last grain and a large manifest after it.
    unpacker = msgpack.Unpacker(
        raw=False, strict_map_key=False, max_buffer_size=max(len(data), 1)
    )
    unpacker.feed(data[9:])
    try:
        unpacker.skip()
    except msgpack.OutOfData:
        raise DecodeError(
            f"grain {index} is truncated",
            code=ErrorCode.TOO_SHORT,
            path=f"grain[{index}] at offset {offset}",
        ) from None
    except (ValueError, msgpack.UnpackException) as exc:
        raise DecodeError(
            f"grain {index} is not MessagePack: {exc}",
            path=f"grain[{index}] at offset {offset}",
        ) from exc
    return data[: 9 + unpacker.tell()]


def _checked(blob: bytes, index: int, offset: int) -> bytes:
    """Decode a grain so that a damaged one fails with its own code and place."""
    try:
        decode(blob)
    except OmsError as exc:
        where = f"grain[{index}] at offset {offset}" + (
            "" if exc.path is None else f" {exc.path}"
        )
        raise type(exc)(
            f"grain {index}: {exc.message}", code=exc.code, path=where
        ) from exc
    return blob
