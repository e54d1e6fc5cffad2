"""The ``.mg`` container file and the length-prefixed wire framing (spec §11).

Modules: :mod:`.layout` (the format's constants), :mod:`.write`, :mod:`.read` (with
the streams it reads through, :mod:`.streams`) and :mod:`.frames` (wire framing).
The package imports only from :mod:`oms_rdf.codec` and :mod:`oms_rdf.errors`.

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

from .frames import read_frames, write_frames
from .layout import ENTRY_LIMIT, ERASED_KEY, REGION_LIMIT, WINDOW_LIMIT, tombstone_entry
from .read import MgReader, read_mg
from .write import write_mg

__all__ = [
    "ENTRY_LIMIT",
    "ERASED_KEY",
    "REGION_LIMIT",
    "WINDOW_LIMIT",
    "MgReader",
    "read_frames",
    "read_mg",
    "tombstone_entry",
    "write_frames",
    "write_mg",
]
