"""What may come into the store: a grain from what a caller gave, and put's checks.

Every way in (put, put_many, imports of every format, SPARQL Update, HTTP) takes a
grain through :func:`accept` and :func:`check_new` before its rows are written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..codec.grain import Grain
from ..codec.schema import BELIEF
from ..codec.signing import is_envelope, verify_signature
from ..errors import ErrorCode, PolicyError, SchemaError, SignatureError
from .policy import is_protected
from .state import GrainLike, Signature, same_claim

if TYPE_CHECKING:
    from .core import Core


def accept(item: GrainLike) -> tuple[Grain, Signature | None]:
    """A grain from what a caller gave, and its verified signature if it came signed.

    Raises:
        SignatureError: ERR_SIGNED_MISMATCH for a grain whose signed flag is set
            but that arrives without its COSE envelope (spec §9.2).
    """
    signature: Signature | None = None
    if isinstance(item, Grain):
        grain = item
    elif isinstance(item, bytes | bytearray | memoryview):
        data = bytes(item)
        if is_envelope(data):
            blob, did = verify_signature(data)
            grain, signature = Grain.from_blob(blob), Signature(data, did)
        else:
            grain = Grain.from_blob(data)
    elif isinstance(item, Mapping):
        grain = Grain.from_dict(item)
    else:
        raise SchemaError(
            f"expected a Grain, a mapping of fields, blob bytes or a COSE_Sign1 "
            f"envelope; found {type(item).__name__}"
        )
    if grain.get("_disclosure_of") is not None:
        raise SchemaError(
            "a disclosed view is generated on demand and not stored (spec §10); "
            f"store the original {grain['_disclosure_of'][:12]}… instead",
            path="$._disclosure_of",
        )
    if grain.signed and signature is None:
        raise SignatureError(
            "the grain's signed flag (header bit 0) is set but it arrived without its "
            "COSE_Sign1 envelope; put the envelope from oms_rdf.codec.signing.sign()",
            code=ErrorCode.SIGNED_MISMATCH,
        )
    return grain, signature


def check_new(
    core: Core,
    grain: Grain,
    batch: Mapping[str, Grain] | None = None,
    *,
    exempt: str | None = None,
) -> None:
    """Refuse a supersession in disguise (spec §17 Level 2; design §4).

    A new belief whose ``derived_from`` names a current protected belief with the
    same claim would leave two current beliefs where the policy allows one; it
    must go through supersede. ``batch``: grains arriving together, which count
    as stored; ``exempt``: the grain supersede itself replaces.

    Raises:
        PolicyError: ERR_INVALIDATION_DENIED for such a grain.
    """
    parents = grain.get("derived_from")
    if not parents or grain.type_byte != BELIEF.byte:
        return
    now = core.clock()
    for parent in parents:
        if parent == exempt:
            continue
        if batch is not None and parent in batch:
            other = batch[parent]
        elif parent in core:
            other = core.get(parent)
            if not core.status(parent).is_current:
                continue
        else:
            continue
        if other.type_byte != BELIEF.byte or not is_protected(
            other.get("invalidation_policy"), now
        ):
            continue
        if same_claim(grain, other):
            raise PolicyError(
                f"put refused: derived_from names {parent[:12]}…, a current protected "
                "belief with the same subject, relation and namespace; that is a "
                "supersession, use store.supersede(old, new)",
                code=ErrorCode.INVALIDATION_DENIED,
                path="$.derived_from",
            )
