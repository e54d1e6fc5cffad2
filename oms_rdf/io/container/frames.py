"""Wire framing (spec §11.6, digest §11.4): ``u32 length`` + grain bytes, ended by ``00 00 00 00``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO

from ...errors import DecodeError

__all__ = ["read_frames", "write_frames"]


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
