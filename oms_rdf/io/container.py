"""The ``.mg`` container file and the length-prefixed wire framing (spec §11).

Container layout: a 16-byte header (magic ``4D 47 01``, flags, grain count u32,
field-map version, compression codec, 6 reserved bytes), one u32 offset per grain,
the grains back to back, an optional index manifest (flag bit 4: a canonical
MessagePack map keyed by content address), and a SHA-256 footer over everything
before it. Offsets are absolute from the start of the file (uncompressed files) or
from the start of the decompressed grain region (zstd, flag bit 2). All integers
are big-endian.

Wire framing: repeated ``u32 length`` + grain bytes, ended by ``00 00 00 00``.

Both readers stream: a container is read once front to back, so files larger
than memory are fine; only the offset index (4 bytes a grain) and one grain or
manifest entry at a time are held. A compressed grain region is inflated as it is
read, never held whole.

What a hostile file can make the reader do is bounded by what the file itself
justifies, checked before any grain is read: the offset table must start where the
grains start and give each grain between 10 bytes and
:data:`~oms_rdf.codec.MAX_BLOB` (1 MiB), so a compressed region may inflate to at
most its last offset plus one last grain (at most grain count x 1 MiB, and never
more than :data:`REGION_LIMIT`, 2 GiB); a zstd frame that declares a larger size
or a window over :data:`WINDOW_LIMIT` is refused before it inflates.

>>> import io
>>> from oms_rdf.codec.grain import Belief
>>> g = Belief("a", "b", "c", 0.5, created_at=0)
>>> buf = io.BytesIO()
>>> write_mg([g.blob], buf)
1
>>> _ = buf.seek(0)
>>> [b == g.blob for b in read_mg(buf).blobs()]
[True]
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

import msgpack

from ..codec import MAX_BLOB, check_address, decode
from ..codec.header import MIN_BLOB
from ..errors import DecodeError, EncodeError, ErrorCode, IntegrityError, OmsError

__all__ = [
    "ERASED_KEY",
    "MgReader",
    "read_frames",
    "read_mg",
    "tombstone_entry",
    "write_frames",
    "write_mg",
]

MAGIC = b"MG\x01"
HEADER_SIZE = 16
FOOTER_SIZE = 32
FIELD_MAP_VERSION = 0x01
FLAG_DEDUPLICATED = 0x02
FLAG_COMPRESSED = 0x04
FLAG_FIELD_MAP = 0x08
FLAG_MANIFEST = 0x10
CODEC_NONE, CODEC_ZSTD = 0x00, 0x01
_CHUNK = 1 << 20
# Compressed bytes fed to the decompressor at a time: a zstd block inflates to at
# most 128 KiB from a few bytes, so one step's output stays within ~10 MiB.
_ZSTD_STEP = 256
REGION_LIMIT = 1 << 31
"""The largest decompressed grain region read or written (2 GiB): about six
million grains of 300 bytes. Its offsets bound it more tightly."""
WINDOW_LIMIT = 1 << 23
"""The largest zstd window a compressed container may ask for (8 MiB: zstd levels
1-19); the decompressor allocates it before inflating anything."""
ERASED_KEY = "oms_rdf:erased"
"""A manifest entry of this local key alone is a tombstone: the grain its address
names was erased (at this epoch ms), and no import may bring it back. Spec §11.3
lets a manifest carry local fields and entries; a reader that does not know the
key finds an entry with no portable field, for a grain the file does not hold."""
# The largest manifest entry read (a signed grain's envelope, its evidence): the
# manifest is read an entry at a time, so this, not its size, bounds memory.
ENTRY_LIMIT = 64 << 20


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
    offsets: list[int] = []
    with tempfile.TemporaryFile() as spool, tempfile.TemporaryFile() as tail:
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
        count = len(offsets)
        # Offsets are u32, and a reader inflates at most REGION_LIMIT.
        base = 0 if compress else HEADER_SIZE + 4 * count
        last = base + offsets[-1] if offsets else 0
        if last > 0xFFFFFFFF or (compress and position > REGION_LIMIT):
            raise EncodeError(
                f"{count} grains of {position} bytes do not fit one container: "
                + (
                    f"a compressed region holds at most {REGION_LIMIT} bytes"
                    if compress
                    else "its u32 offsets reach 4 GiB at most"
                ),
                code=ErrorCode.RANGE,
            )
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
        if compress:
            import zstandard

            compressor = zstandard.ZstdCompressor(level=3).compressobj()
            while chunk := spool.read(_CHUNK):
                emit(compressor.compress(chunk))
            emit(compressor.flush())
        else:
            while chunk := spool.read(_CHUNK):
                emit(chunk)
        if entries:
            emit(_map_header(entries))
            tail.seek(0)
            while chunk := tail.read(_CHUNK):
                emit(chunk)
        out.write(digest.digest())
    return count


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
    if isinstance(value, Mapping):
        return {k: _canonical(value[k]) for k in sorted(value)}
    return value


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
        stream = _HashingReader(self.source, digest, self.progress)
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
        region: _HashingReader | _ZstdRegion = stream
        if compressed:
            # The region holds the grains the table sizes and one last grain, so
            # a larger output is a decompression bomb; it is refused as it grows.
            region = _ZstdRegion(
                stream,
                min(offsets[-1] + MAX_BLOB if offsets else 0, REGION_LIMIT),
            )
        for i in range(self.count - 1):
            size = offsets[i + 1] - offsets[i]
            yield self._grain(region.read_exact(size, f"grain {i}"), i, offsets[i])
        # The last grain runs to the manifest or the footer: it ends where its
        # MessagePack map ends.
        if isinstance(region, _ZstdRegion):
            tail = region.read_all()  # the frame ends: what follows is the manifest
            rest = _Rest(region.leftover, stream)
            last = b""
            if self.count:
                last = _split_grain(tail, self.count - 1, offsets[-1])
            if len(last) != len(tail):
                raise DecodeError(
                    f"{len(tail) - len(last)} bytes after the last grain in the "
                    "compressed region",
                    path="grain region",
                )
            if self.count:
                yield self._grain(last, self.count - 1, offsets[-1])
        else:
            rest = _Rest(b"", stream)
            if self.count:
                last = rest.grain(self.count - 1, offsets[-1])
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


def tombstone_entry(erased_at: int) -> dict[str, Any]:
    """The manifest entry of an erased grain: its address is the key, and this
    the time of the erasure (epoch ms)."""
    return {ERASED_KEY: erased_at}


def _erased(address: str, entry: Mapping[str, Any]) -> int:
    """The erasure time of a tombstone entry, checked."""
    when = entry[ERASED_KEY]
    if len(entry) != 1 or type(when) is not int or when < 0:
        raise DecodeError(
            f"a tombstone entry holds only {ERASED_KEY}, the erasure's time in epoch "
            f"ms; found {dict(entry)!r}",
            path=f"manifest {address[:12]}…",
        )
    return when


class _HashingReader:
    """Reads a stream, hashing every byte except the last 32 (the footer)."""

    def __init__(
        self, source: IO[bytes], digest: Any, progress: Callable[[int], object] | None
    ) -> None:
        self.source, self.digest, self.progress = source, digest, progress
        self.pending = bytearray()  # bytes read but maybe part of the footer ...
        self.head = 0  # ... from this position on
        self.footer = b""
        self.offset = 0

    def _fill(self, n: int) -> None:
        # Chunks of a fixed size: a count or length read from the file asks for
        # at most what the file holds, never an allocation of its own size.
        while len(self.pending) - self.head < n + FOOTER_SIZE:
            chunk = self.source.read(_CHUNK)
            if not chunk:
                break
            if self.progress is not None:
                self.progress(len(chunk))
            if self.head > _CHUNK:  # drop what was read, now and then
                del self.pending[: self.head]
                self.head = 0
            self.pending += chunk

    def read(self, n: int) -> bytes:
        """Read up to n bytes, never into the last 32 (the footer)."""
        self._fill(n)
        available = max(0, len(self.pending) - self.head - FOOTER_SIZE)
        data = bytes(self.pending[self.head : self.head + min(n, available)])
        self.head += len(data)
        self.digest.update(data)
        self.offset += len(data)
        return data

    def read_exact(self, n: int, what: str) -> bytes:
        data = self.read(n)
        if len(data) != n:
            raise DecodeError(
                f"file ends inside the {what}: needed {n} bytes at offset {self.offset - len(data)}, "
                f"found {len(data)} before the 32-byte footer",
                code=ErrorCode.TOO_SHORT,
                path=f"offset {self.offset - len(data)}",
            )
        return data

    def end(self) -> None:
        """Take the footer, once every byte before it has been read."""
        left = len(self.pending) - self.head
        if left != FOOTER_SIZE:
            raise DecodeError(
                f"file ends without its 32-byte footer ({left} bytes left)",
                code=ErrorCode.TOO_SHORT,
                path="footer",
            )
        self.footer = bytes(self.pending[self.head :])


class _Rest:
    """What follows the grains of known size: the last grain, then the manifest.

    Neither has a length of its own: each ends where its MessagePack ends, so
    both are read by an unpacker fed a chunk at a time (one entry in memory).
    """

    def __init__(self, prefix: bytes, stream: _HashingReader) -> None:
        self.stream = stream
        self.buffer = bytearray(prefix)  # read, not yet given to an unpacker
        self.offset = stream.offset - len(prefix)  # of buffer[0] in the file
        self.unpacker: Any = None  # the manifest's, once it is read
        self.fed = 0  # bytes given to it

    def grain(self, index: int, offset: int) -> bytes:
        """The last grain: its 9-byte header and one map."""
        where = f"grain[{index}] at offset {offset}"
        data, self.buffer = self.buffer, bytearray()
        unpacker = msgpack.Unpacker(
            raw=False, strict_map_key=False, max_buffer_size=MAX_BLOB + _CHUNK
        )
        fed = 0
        while True:
            if len(data) > 9 + fed:
                unpacker.feed(bytes(data[9 + fed :]))
                fed = len(data) - 9
                try:
                    unpacker.skip()
                    break
                except msgpack.OutOfData:
                    pass
                except (ValueError, msgpack.UnpackException) as exc:
                    raise DecodeError(
                        f"grain {index} is not MessagePack: {exc}", path=where
                    ) from exc
            chunk = self.stream.read(_CHUNK)
            if not chunk:
                raise DecodeError(
                    f"grain {index} is truncated", code=ErrorCode.TOO_SHORT, path=where
                )
            if len(data) > MAX_BLOB:
                raise DecodeError(
                    f"grain {index} runs past {MAX_BLOB} bytes, the most a grain "
                    "may have (1 MiB)",
                    code=ErrorCode.RANGE,
                    path=where,
                )
            data += chunk
        end = 9 + unpacker.tell()
        self.offset += end
        self.buffer = data[end:]
        return bytes(data[:end])

    def manifest(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each entry of the index manifest, a map of address to index fields."""
        where = f"manifest at offset {self.offset}"
        self.unpacker = msgpack.Unpacker(raw=False, max_buffer_size=ENTRY_LIMIT)
        self.fed = len(self.buffer)
        self.unpacker.feed(bytes(self.buffer))
        self.buffer = bytearray()
        count = self._next(self.unpacker.read_map_header, where, "a map")
        for number in range(count):
            key = self._next(self.unpacker.unpack, where)
            value = self._next(self.unpacker.unpack, where)
            if not isinstance(key, str) or not isinstance(value, dict):
                raise DecodeError(
                    "index manifest must map addresses to maps of index fields; "
                    f"entry {number} maps {type(key).__name__} to {type(value).__name__}",
                    path=where,
                )
            yield check_address(key, path=f"manifest entry {number}"), value

    def _next(
        self, read: Callable[[], Any], where: str, what: str = "MessagePack"
    ) -> Any:
        while True:
            try:
                return read()
            except msgpack.OutOfData:
                chunk = self.stream.read(_CHUNK)
                if not chunk:
                    raise DecodeError(
                        "index manifest is truncated",
                        code=ErrorCode.TOO_SHORT,
                        path=where,
                    ) from None
                try:
                    self.unpacker.feed(chunk)
                except msgpack.BufferFull:
                    raise DecodeError(
                        f"a manifest entry runs past {ENTRY_LIMIT} bytes", path=where
                    ) from None
                self.fed += len(chunk)
            except (ValueError, msgpack.UnpackException) as exc:
                raise DecodeError(
                    f"index manifest is not {what}: {exc}", path=where
                ) from exc

    def end(self, manifest: bool) -> None:
        """Every byte before the footer must have been read."""
        extra = len(self.buffer)
        if self.unpacker is not None:
            extra = self.fed - self.unpacker.tell()
        while chunk := self.stream.read(_CHUNK):
            extra += len(chunk)
        if extra:
            after = "the manifest" if manifest else "the last grain (no manifest flag)"
            raise DecodeError(
                f"{extra} unexpected bytes after {after}",
                path=f"offset {self.stream.offset - extra}",
            )


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
            raise DecodeError(
                f"offsets {offsets[i]} and {offsets[i + 1]} leave {size} bytes for grain {i}",
                path=f"index[{i + 1}]",
            )
        if size > MAX_BLOB:
            raise DecodeError(
                f"offsets {offsets[i]} and {offsets[i + 1]} give grain {i} {size} "
                f"bytes; a grain may have at most {MAX_BLOB} (1 MiB)",
                code=ErrorCode.RANGE,
                path=f"index[{i + 1}]",
            )


class _ZstdRegion:
    """The grain region of a zstd container (one frame), inflated as it is read.

    Offsets point into the decompressed region, never into the compressed stream
    (spec §11.2). The region is read front to back, so it is inflated a step at a
    time as grains are read, and never held: memory holds one grain and one step's
    output. It may not inflate past ``limit``, what the offset table justifies;
    a frame that declares more, or a window over :data:`WINDOW_LIMIT`, is refused
    before it inflates. The bytes after the frame (the manifest) are kept aside.
    """

    def __init__(self, stream: _HashingReader, limit: int) -> None:
        try:
            import zstandard
        except ImportError as exc:
            raise DecodeError(
                "a zstd-compressed container needs the 'zstandard' package"
            ) from exc
        self.zstd: Any = zstandard
        self.stream, self.limit = stream, limit
        decompressor = zstandard.ZstdDecompressor(max_window_size=WINDOW_LIMIT)
        self.inflater = decompressor.decompressobj()
        self.chunk, self.fed = b"", 0  # compressed bytes read, and how many fed
        self.buffer, self.head = bytearray(), 0  # inflated, and how far read
        self.inflated = 0
        self.started = self.ended = False
        self.leftover = b""  # the bytes after the frame, once it has ended

    def _frame(self) -> None:
        """Check what the frame's header declares, before inflating anything."""
        zstd = self.zstd
        try:
            frame = zstd.get_frame_parameters(self.chunk)
        except zstd.ZstdError:
            return  # too short or no frame: decompressing names the fault
        size = frame.content_size
        if size not in (zstd.CONTENTSIZE_UNKNOWN, zstd.CONTENTSIZE_ERROR) and (
            size > self.limit
        ):
            raise DecodeError(
                f"the compressed grain region declares {size} bytes, more than the "
                f"{self.limit} its offsets and one last grain of {MAX_BLOB} bytes "
                "can use",
                path="grain region",
            )
        if frame.window_size > WINDOW_LIMIT:
            raise DecodeError(
                f"the compressed grain region asks for a zstd window of "
                f"{frame.window_size} bytes; at most {WINDOW_LIMIT} (zstd levels 1-19)",
                path="grain region",
            )

    def _step(self) -> bool:
        """Inflate one step of the frame; False once it has ended."""
        if self.ended:
            return False
        if self.fed >= len(self.chunk):
            self.chunk, self.fed = self.stream.read(_CHUNK), 0
            if not self.chunk:
                raise DecodeError(
                    "compressed grain region is truncated", code=ErrorCode.TOO_SHORT
                )
            if not self.started:
                self.started = True
                self._frame()
        step = self.chunk[self.fed : self.fed + _ZSTD_STEP]
        self.fed += len(step)
        try:
            out = self.inflater.decompress(step)
        except self.zstd.ZstdError as exc:
            raise DecodeError(
                f"compressed grain region is not valid zstd: {exc}"
            ) from exc
        self.inflated += len(out)
        if self.inflated > self.limit:
            raise DecodeError(
                f"the compressed grain region expands past {self.limit} bytes, "
                "more than its offsets and one last grain of "
                f"{MAX_BLOB} bytes can use",
                path="grain region",
            )
        if self.head > _CHUNK:  # drop what was read, now and then
            del self.buffer[: self.head]
            self.head = 0
        self.buffer += out
        if self.inflater.eof:
            self.ended = True
            self.leftover = self.inflater.unused_data + self.chunk[self.fed :]
        return True

    def read_exact(self, n: int, what: str) -> bytes:
        while len(self.buffer) - self.head < n:
            if not self._step():
                raise DecodeError(
                    f"compressed region ends inside {what}", code=ErrorCode.TOO_SHORT
                )
        data = bytes(self.buffer[self.head : self.head + n])
        self.head += n
        return data

    def read_all(self) -> bytes:
        """The rest of the region (the last grain), once the frame has ended."""
        while self._step():
            pass
        data = bytes(self.buffer[self.head :])
        self.buffer, self.head = bytearray(), 0
        return data


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


def write_frames(blobs: Iterable[bytes], out: IO[bytes]) -> int:
    """Write blobs as wire frames (u32 length + bytes), then the zero sentinel."""
    count = 0
    for blob in blobs:
        out.write(len(blob).to_bytes(4, "big"))
        out.write(blob)
        count += 1
    out.write(bytes(4))
    return count


def read_frames(source: IO[bytes]) -> Iterator[bytes]:
    """Yield the blobs of a wire stream, up to the zero-length sentinel.

    Raises:
        DecodeError: ERR_CORRUPT for a truncated frame or a missing sentinel.
    """
    offset = 0
    while True:
        head = source.read(4)
        if len(head) < 4:
            raise DecodeError(
                "wire stream ends without the 00 00 00 00 sentinel",
                path=f"offset {offset}",
            )
        size = int.from_bytes(head, "big")
        if size == 0:
            return
        blob = source.read(size)
        if len(blob) < size:
            raise DecodeError(
                f"frame of {size} bytes truncated to {len(blob)}",
                path=f"offset {offset}",
            )
        offset += 4 + size
        yield blob
