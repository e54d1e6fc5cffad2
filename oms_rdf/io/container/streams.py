"""The streams a container is read through: hashing, the tail, a zstd region."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO, Any

import msgpack

from ...codec import MAX_BLOB, check_address
from ...errors import DecodeError, ErrorCode
from .layout import CHUNK, ENTRY_LIMIT, FOOTER_SIZE, WINDOW_LIMIT

__all__ = ["HashingReader", "TailReader", "ZstdRegion"]

# Compressed bytes fed to the decompressor at a time: a zstd block inflates to at
# most 128 KiB from a few bytes, so one step's output stays within ~10 MiB.
_ZSTD_STEP = 256


class HashingReader:
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
            chunk = self.source.read(CHUNK)
            if not chunk:
                break
            if self.progress is not None:
                self.progress(len(chunk))
            if self.head > CHUNK:  # drop what was read, now and then
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
            # The last 32 bytes are taken as the footer, so in a truncated file
            # the part named is where the bytes ran out, not where the cut is.
            total = self.offset + len(self.pending) - self.head
            raise DecodeError(
                f"file ends inside the {what}: needed {n} bytes at offset "
                f"{self.offset - len(data)}, found {len(data)} before the last 32 "
                f"(the footer); the file has {total} bytes in all: truncated?",
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


class TailReader:
    """What follows the grains of known size: the last grain, then the manifest.

    Neither has a length of its own: each ends where its MessagePack ends, so
    both are read by an unpacker fed a chunk at a time (one entry in memory).
    """

    def __init__(self, prefix: bytes, stream: HashingReader) -> None:
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
            raw=False, strict_map_key=False, max_buffer_size=MAX_BLOB + CHUNK
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
            chunk = self.stream.read(CHUNK)
            if not chunk:
                # The last 32 bytes were taken as the footer: a file cut in its
                # manifest or footer ends here too, so both places are named.
                raise DecodeError(
                    f"the file ends inside grain {index}, the last before the index "
                    "manifest, or inside that manifest and the footer after it: "
                    "truncated?",
                    code=ErrorCode.TOO_SHORT,
                    path=where,
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
        self.unpacker = msgpack.Unpacker(
            raw=False, max_buffer_size=ENTRY_LIMIT, object_pairs_hook=_unique_keys
        )
        self.fed = len(self.buffer)
        self.unpacker.feed(bytes(self.buffer))
        self.buffer = bytearray()
        count = self._next(self.unpacker.read_map_header, where, "a map")
        previous = ""  # a canonical map's keys ascend (spec §2.1): none twice
        for number in range(count):
            key = self._next(self.unpacker.unpack, where)
            value = self._next(self.unpacker.unpack, where)
            if not isinstance(key, str) or not isinstance(value, dict):
                raise DecodeError(
                    "index manifest must map addresses to maps of index fields; "
                    f"entry {number} maps {type(key).__name__} to {type(value).__name__}",
                    path=where,
                )
            address = check_address(key, path=f"manifest entry {number}")
            if address <= previous:
                what = "two entries for" if address == previous else "out of order at"
                raise DecodeError(
                    f"the manifest has {what} grain {address}; a canonical map's "
                    "keys ascend, each once",
                    path=f"manifest entry {number}",
                )
            previous = address
            yield address, value

    def _next(
        self, read: Callable[[], Any], where: str, what: str = "MessagePack"
    ) -> Any:
        while True:
            try:
                return read()
            except msgpack.OutOfData:
                chunk = self.stream.read(CHUNK)
                if not chunk:
                    raise DecodeError(
                        "index manifest is truncated (or the file is, and its "
                        "last 32 bytes were taken as the footer)",
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
        while chunk := self.stream.read(CHUNK):
            extra += len(chunk)
        if extra:
            after = "the manifest" if manifest else "the last grain (no manifest flag)"
            raise DecodeError(
                f"{extra} unexpected bytes after {after}",
                path=f"offset {self.stream.offset - extra}",
            )


class ZstdRegion:
    """The grain region of a zstd container (one frame), inflated as it is read.

    Offsets point into the decompressed region, never into the compressed stream
    (spec §11.2). The region is read front to back, so it is inflated a step at a
    time as grains are read, and never held: memory holds one grain and one step's
    output. It may not inflate past ``limit``, what the offset table justifies;
    a frame that declares more, or a window over :data:`WINDOW_LIMIT`, is refused
    before it inflates. The bytes after the frame (the manifest) are kept aside.
    """

    def __init__(self, stream: HashingReader, limit: int) -> None:
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
            self.chunk, self.fed = self.stream.read(CHUNK), 0
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
        if self.head > CHUNK:  # drop what was read, now and then
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


def _unique_keys(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    """A map of the manifest; a key twice is refused, as in a grain (spec §2.1)."""
    mapping: dict[Any, Any] = {}
    for key, value in pairs:
        if key in mapping:
            raise ValueError(f"the key {key!r} twice in one map")
        mapping[key] = value
    return mapping
