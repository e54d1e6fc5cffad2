"""The container format's constants (spec §11.1-§11.3), and the tombstone entry."""

from __future__ import annotations

from typing import Any

MAGIC = b"MG\x01"
HEADER_SIZE = 16
FOOTER_SIZE = 32
FIELD_MAP_VERSION = 0x01
FLAG_DEDUPLICATED = 0x02
FLAG_COMPRESSED = 0x04
FLAG_FIELD_MAP = 0x08
FLAG_MANIFEST = 0x10
CODEC_NONE, CODEC_ZSTD = 0x00, 0x01
CHUNK = 1 << 20  # bytes read or written at a time
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


def tombstone_entry(erased_at: int) -> dict[str, Any]:
    """The manifest entry of an erased grain: its address is the key, and this
    the time of the erasure (epoch ms)."""
    return {ERASED_KEY: erased_at}
