"""What may come into the store: a grain from what a caller gave, and put's checks.

Every way in (put, put_many, imports of every format, SPARQL Update, HTTP) takes a
grain through :func:`accept` and :func:`check_new` before its rows are written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..codec.grain import Grain
from ..codec.schema import BELIEF
from ..codec.signing import is_envelope, verify_signature
from ..errors import ErrorCode, PolicyError, SchemaError, SignatureError
from ..times import MAX_MS, MIN_MS, iso
from .policy import MAX_HOPS, is_protected
from .protectors import protectors
from .questions import Questions
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
    _check_ownership(grain, signature)
    check_axes(grain)
    return grain, signature


# The fields that place a grain on the store's two time axes.
_AXES = ("valid_from", "valid_to", "system_valid_from")


def check_axes(grain: Grain) -> None:
    """Refuse a grain the store cannot place in time: its valid or system time
    outside years 1-9999, which an ``xsd:dateTime`` cannot write (the codec
    keeps such a grain; time-travel questions could not compare it).

    Raises:
        SchemaError: ERR_RANGE naming the field (a field out of range, as the
            codec's: the caller's mistake, not a refusal by a rule of the store).
    """
    for name in _AXES:
        value = grain.get(name)
        if type(value) is int and not MIN_MS <= value <= MAX_MS:
            edge = iso(MIN_MS if value < MIN_MS else MAX_MS)
            raise SchemaError(
                f"{name} {value} ms is outside years 1-9999 (the store's time axes are "
                f"xsd:dateTime; the nearest it can hold is {edge})",
                code=ErrorCode.RANGE,
                path=f"$.{name}",
            )


def _check_ownership(grain: Grain, signature: Signature | None) -> None:
    """An ownership grain (spec §12.5: ``mg:owned_by`` in ``agent:identity``, its
    subject the agent's DID) is the operator's word: the agent it names may not
    write it, as author or as signer (§8.7 key separation)."""
    if (
        grain.type_byte != BELIEF.byte
        or grain.get("relation") != "mg:owned_by"
        or grain.get("namespace") != "agent:identity"
    ):
        return
    agent = grain.get("subject")
    for role, did in (
        ("author_did", grain.get("author_did")),
        ("signer", None if signature is None else signature.did),
    ):
        if did is not None and did == agent:
            raise PolicyError(
                f"put refused: an ownership grain names the agent {agent} and is "
                f"written by it ({role}); the operator writes it, never the agent's "
                "own DID (spec §8.7)",
                code=ErrorCode.INVALIDATION_DENIED,
                path="$.author_did" if role == "author_did" else "$.subject",
            )


def check_new(
    core: Core,
    grain: Grain,
    batch: Mapping[str, Grain] | None = None,
    *,
    exempt: str | None = None,
    may_replace: Callable[[str], bool] | None = None,
) -> None:
    """Refuse a supersession in disguise (spec §8.5 chain injection, §17 Level 2).

    A new belief whose derivation ancestry (``derived_from``, up to 16 hops)
    leads to a current protected belief with the same claim would leave two
    current beliefs where the policy allows one; it must go through supersede.
    ``batch``: grains arriving together, which count as stored; ``exempt``: the
    grain supersede itself replaces (its own ancestry is still walked);
    ``may_replace``: for a merge (a successor that names more than the grain it
    replaces), whether the caller could supersede a stored parent it names too.

    Raises:
        PolicyError: ERR_INVALIDATION_DENIED for such a grain.
    """
    if not grain.get("derived_from") or grain.type_byte != BELIEF.byte:
        return
    now = core.clock()
    for hops, other in _ancestry(core, grain, batch):
        if other.address == exempt or other.type_byte != BELIEF.byte:
            continue
        if not same_claim(grain, other) or not _protected(core, other, now):
            continue
        if other.address in core and not core.status(other.address).is_current:
            continue
        if hops == 1 and may_replace is not None and other.address in core:
            if may_replace(other.address):
                continue
        via = "names" if hops == 1 else f"leads in {hops} hops to"
        raise PolicyError(
            f"put refused: derived_from {via} {other.address[:12]}…, a current "
            "protected belief with the same subject, relation and namespace; that "
            "is a supersession, use store.supersede(old, new)",
            code=ErrorCode.INVALIDATION_DENIED,
            path="$.derived_from",
        )


def _protected(core: Core, grain: Grain, now: int) -> bool:
    """Whether a policy protects a belief: its own, and for a stored one those
    it inherits (a subtree ancestor's, a lineage's), as a change of it would be
    checked."""
    if is_protected(grain.get("invalidation_policy"), now):
        return True
    if grain.address not in core:
        return False
    found = protectors(core, Questions(core), grain.address)
    return any(is_protected(p.policy, now) for p in found)


def _ancestry(
    core: Core, grain: Grain, batch: Mapping[str, Grain] | None
) -> Iterator[tuple[int, Grain]]:
    """The grains a grain derives from, breadth first up to MAX_HOPS, each once
    with its distance; those neither stored, nor in ``batch``, nor made by an
    earlier operation of the open transaction are passed over."""
    made = core.pending.made if core.pending is not None else {}
    frontier, seen = [grain], {grain.address}
    for hops in range(1, MAX_HOPS + 1):
        parents = []
        for child in frontier:
            for parent in child.get("derived_from") or ():
                if parent in seen:
                    continue
                seen.add(parent)
                if batch is not None and parent in batch:
                    parents.append(batch[parent])
                elif parent in made:
                    parents.append(made[parent])
                elif parent in core:
                    parents.append(core.get(parent))
        for parent_grain in parents:
            yield hops, parent_grain
        frontier = parents


def successor_fields(
    old: str,
    new: Mapping[str, Any],
    justification: str | None,
    auth: Sequence[bytes] = (),
) -> dict[str, Any]:
    """The fields of a mapping ``new`` superseding the grain ``old``, in the
    spec's shape: ``derived_from: [old]``, ``justification`` and ``auth`` as its
    ``supersession_justification`` and ``supersession_auth``, where it says none."""
    fields = dict(new)
    defaults = {
        "derived_from": [old],
        "supersession_justification": justification,
        "supersession_auth": list(auth) or None,
    }
    for name, value in defaults.items():
        if fields.get(name) is None and value is not None:
            fields[name] = value
    return fields
