"""What a caller scoped to some namespaces may see of the grains, by address.

A grain outside the caller's namespaces is not found, in the very words a grain
that is not there is not found: by a full address or by a prefix, no answer may
tell the one from the other (an address is a content hash, so one who can guess a
grain's content could otherwise learn that it is stored). A prefix that two
visible grains share is ambiguous, and the refusal lists only those.
"""

from __future__ import annotations

from collections.abc import Callable

from ..codec.grain import Grain
from ..errors import ErrorCode, NotFoundError, SchemaError
from ..store import GrainStore
from ..store.presence import addresses_with_prefix

__all__ = ["scoped_grain"]

_HEX = frozenset("0123456789abcdef")


def scoped_grain(
    store: GrainStore, ref: str, covers: Callable[[str | None], bool]
) -> Grain:
    """The grain ``ref`` (an address, or a unique prefix of 8+ hex) names among
    those whose namespace ``covers`` takes.

    Raises:
        NotFoundError: ERR_NOT_FOUND for a grain not stored or not visible.
        SchemaError: ERR_HASH_FORMAT for a prefix two visible grains share.
        IntegrityError: ERR_HASH_FORMAT or ERR_HASH_LENGTH for text that is no
            address nor prefix.
    """
    if 8 <= len(ref) < 64 and set(ref) <= _HEX:
        found = [
            grain
            for address in addresses_with_prefix(store.backend, ref)
            if covers((grain := store.get(address)).namespace)
        ]
        if not found:
            raise NotFoundError(f"no grain {ref}… in this store")
        if len(found) > 1:
            listed = ", ".join(g.address[:16] for g in found[:4])
            raise SchemaError(
                f"the prefix {ref} is ambiguous: {listed}…; give more of the address",
                code=ErrorCode.HASH_FORMAT,
            )
        return found[0]
    grain = store.get(store.resolve(ref))
    if not covers(grain.namespace):
        raise NotFoundError(f"no grain {grain.address} in this store")
    return grain
