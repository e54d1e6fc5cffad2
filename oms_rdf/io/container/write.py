"""Writing a container: grains and manifest spooled, then header, index, footer."""

from __future__ import annotations

import hashlib
import tempfile
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import IO, Any

import msgpack

from ...codec import MAX_BLOB
from ...errors import EncodeError, ErrorCode
from .layout import (
    CHUNK,
    CODEC_NONE,
    CODEC_ZSTD,
    FIELD_MAP_VERSION,
    FLAG_COMPRESSED,
    FLAG_DEDUPLICATED,
    FLAG_MANIFEST,
    HEADER_SIZE,
    MAGIC,
    REGION_LIMIT,
)

__all__ = ["write_mg"]


def write_mg(
    blobs: Iterable[bytes],
    out: IO[bytes],
    *,
    manifest: Mapping[str, Mapping[str, Any]]
    | Iterable[tuple[str, Mapping[str, Any]]]
    | None = None,
    deduplicated: bool = False,
    compress: bool = False,
) -> int:
    """Write a container of ``blobs``; return the number of grains written.

    The grains are spooled to a temporary file first (the offset index precedes
    them), and so are the manifest's entries (the map's length precedes them), so
    the input may be larger than memory.

    Args:
        manifest: index-layer state by content address, with compacted keys
            (``sb``, ``svt``, ``vstatus``, ...); written only when not empty. A
            mapping, or ``(address, entry)`` pairs in ascending address order
            (the canonical order; then only one entry is held at a time).
        deduplicated: set flag bit 1 (the caller guarantees unique addresses).
        compress: write the grain region as one zstd frame (level 3; needs the
            ``zstandard`` package); offsets then point into the decompressed region.
    """
    with tempfile.TemporaryFile() as spool, tempfile.TemporaryFile() as tail:
        offsets, size = _spool_grains(blobs, spool)
        count = len(offsets)
        base = 0 if compress else HEADER_SIZE + 4 * count
        _check_fits(count, base + offsets[-1] if offsets else 0, size, compress)
        flags = FLAG_DEDUPLICATED if deduplicated else 0
        codec = CODEC_NONE
        if compress:
            flags |= FLAG_COMPRESSED
            codec = CODEC_ZSTD
        entries = _pack_manifest(manifest or {}, tail)
        if entries:
            flags |= FLAG_MANIFEST
        digest = hashlib.sha256()

        def emit(data: bytes) -> None:
            digest.update(data)
            out.write(data)

        emit(
            MAGIC
            + bytes([flags])
            + count.to_bytes(4, "big")
            + bytes([FIELD_MAP_VERSION, codec])
            + bytes(6)
        )
        emit(b"".join((base + o).to_bytes(4, "big") for o in offsets))
        spool.seek(0)
        _copy(spool, emit, compress=compress)
        if entries:
            emit(_map_header(entries))
            tail.seek(0)
            _copy(tail, emit, compress=False)
        out.write(digest.digest())
    return count


def _spool_grains(blobs: Iterable[bytes], spool: IO[bytes]) -> tuple[list[int], int]:
    """Write the grains to ``spool``; return their offsets and their total size."""
    offsets: list[int] = []
    position = 0
    for blob in blobs:
        if len(blob) > MAX_BLOB:
            raise EncodeError(
                f"grain {len(offsets)} is {len(blob)} bytes; a grain may be at "
                f"most {MAX_BLOB} bytes (1 MiB)",
                code=ErrorCode.RANGE,
                path=f"grain[{len(offsets)}]",
            )
        offsets.append(position)
        spool.write(blob)
        position += len(blob)
    return offsets, position


def _check_fits(count: int, last: int, size: int, compress: bool) -> None:
    """Refuse grains whose last offset passes u32, or a region a reader refuses."""
    if last > 0xFFFFFFFF or (compress and size > REGION_LIMIT):
        raise EncodeError(
            f"{count} grains of {size} bytes do not fit one container: "
            + (
                f"a compressed region holds at most {REGION_LIMIT} bytes"
                if compress
                else "its u32 offsets reach 4 GiB at most"
            ),
            code=ErrorCode.RANGE,
        )


def _copy(source: IO[bytes], emit: Callable[[bytes], None], *, compress: bool) -> None:
    """Emit ``source`` a chunk at a time, as one zstd frame (level 3) if asked."""
    if not compress:
        while chunk := source.read(CHUNK):
            emit(chunk)
        return
    import zstandard

    compressor = zstandard.ZstdCompressor(level=3).compressobj()
    while chunk := source.read(CHUNK):
        emit(compressor.compress(chunk))
    emit(compressor.flush())


def _pack_manifest(
    manifest: Mapping[str, Mapping[str, Any]] | Iterable[tuple[str, Mapping[str, Any]]],
    spool: IO[bytes],
) -> int:
    """Pack the manifest's entries into ``spool``; return their number.

    Keys go in ascending order, as canonical MessagePack has them; pairs that are
    not in that order are refused rather than written out of it.
    """
    pairs = sorted(manifest.items()) if isinstance(manifest, Mapping) else manifest
    count, last = 0, None
    for address, entry in pairs:
        if last is not None and address <= last:
            raise EncodeError(
                "manifest entries must come in ascending address order, found "
                f"{address[:12]}… after {last[:12]}…",
                path="manifest",
            )
        spool.write(msgpack.packb(address, use_bin_type=True))
        spool.write(msgpack.packb(_canonical(entry), use_bin_type=True))
        count, last = count + 1, address
    return count


def _map_header(length: int) -> bytes:
    """The MessagePack header of a map of ``length`` pairs."""
    if length < 16:
        return bytes([0x80 | length])
    if length < 1 << 16:
        return b"\xde" + length.to_bytes(2, "big")
    return b"\xdf" + length.to_bytes(4, "big")


def _canonical(value: Any) -> Any:
    """A manifest value as canonical MessagePack has it (spec §2.1): NFC text,
    map keys in order at every depth, arrays in their own order."""
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, Mapping):
        pairs = {_canonical(k): _canonical(v) for k, v in value.items()}
        return {k: pairs[k] for k in sorted(pairs)}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value
