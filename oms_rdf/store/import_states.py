"""Whether the index state an import brings is one the store's operations write.

An export carries, beside each grain, its index state: superseded by which grain,
retracted or contradicted, and when its system time ended. An import writes that
state as history, the one way past system times come in, so it is held to what
``supersede``, ``retract`` and ``contradict`` would have written (design §3: an
import fills the reserved graphs only from an export "whose index agrees"):

- a grain superseded, retracted or contradicted has a system end, and a grain
  with a system end was one of those;
- a retraction or contradiction has its time; no end comes before the grain's
  own system start;
- a successor is another grain, of the source or of the store, not older than
  the grain it replaces, and successions never run in a circle; so is each
  grain a change over a portion of valid time split one into, entering as the
  grain was closed;
- a grain whose own policy nothing may override (``locked``, a ``hold``, a mode
  unknown here, which fails closed) is never closed, nor is a grain that such
  a policy of a derivation ancestor the store holds covers by its ``subtree``
  scope (one the import brings may have come after the grain was closed). A ``timed`` lock, a signature mode or a goal's own transitions may
  have allowed what the index says, and are not judged again.

The state is taken as N-Triples text, the form every import has at hand.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..codec.grain import Grain, system_from
from ..codec.schema import GOAL
from ..errors import DecodeError, ErrorCode, OmsError, PolicyError, TimeRangeError
from ..rdf.mapping import NIH_PREFIX, grain_iri
from ..rdf.vocab import OMS
from ..times import to_millis
from .policy import effective_mode
from .protectors import marked, subtree

if TYPE_CHECKING:
    from . import GrainStore

__all__ = ["ImportStates"]

_FIELDS = {
    str(OMS.status): "status",
    str(OMS.supersededBy): "successor",
    str(OMS.systemTo): "end",
    str(OMS.voidedAt): "voided",
    str(OMS.verificationStatus): "verification",
    str(OMS.effectiveConfidence): "earned",
}
_RETRACTED, _CONTRADICTED = str(OMS.retracted), str(OMS.contradicted)
_ACTIVE, _SUPERSEDED = str(OMS.active), str(OMS.superseded)
_ERASED, _SPLIT_INTO = str(OMS.erasedAt), str(OMS.splitInto)


class ImportStates:
    """Feed it the import's new grains and the index rows of its grains; then
    :meth:`refusals`."""

    def __init__(self, store: GrainStore) -> None:
        self.store = store
        self.starts: dict[str, int] = {}  # new grain -> its system start
        self.sealed: dict[str, str] = {}  # new grain -> the mode nothing overrides
        self.states: dict[str, dict[str, str]] = {}  # grain -> index field -> term
        self.erased: set[str] = set()  # grains the source marks erased
        self.splits: dict[str, list[str]] = {}  # grain -> its oms:splitInto terms
        self.kept: dict[str, Grain] = {}  # new grains with parents or a policy

    def see(self, grain: Grain) -> None:
        """Take one new grain."""
        self.starts[grain.address] = system_from(grain)
        policy = grain.get("invalidation_policy")
        if grain.get("derived_from") or policy is not None:
            self.kept[grain.address] = grain  # a link of a subtree walk
        if policy is None or grain.type_byte == GOAL.byte:
            return
        if (seal := _seal(policy)) is not None:
            self.sealed[grain.address] = seal

    def index(self, address: str, predicate: str, term: str) -> None:
        """Take one index row of a grain (predicate and object as N-Triples)."""
        if predicate == _ERASED:
            self.erased.add(address)
        elif predicate == _SPLIT_INTO:
            self.splits.setdefault(address, []).append(term)
        elif (name := _FIELDS.get(predicate)) is not None:
            self.states.setdefault(address, {})[name] = term

    def refusals(self) -> Iterator[tuple[str, OmsError]]:
        """The new grains whose state the store's operations never write, each
        with the reason, once."""
        refused: dict[str, OmsError] = {}
        for address in self.states.keys() | self.splits.keys():
            if address in self.starts:
                state = self.states.get(address, {})
                error = (
                    self._alone(address, state)
                    or _statuses(state)
                    or self._successor(address, state)
                    or self._split(address, state)
                )
                if error is not None:
                    refused[address] = error
        for address in self._circles():
            refused.setdefault(
                address,
                DecodeError(
                    "it is replaced by itself through others (successions "
                    "and splits run in a circle)"
                ),
            )
        yield from refused.items()

    def _alone(self, address: str, state: dict[str, str]) -> OmsError | None:
        """What one grain's state says of itself."""
        start = self.starts[address]
        voided = state.get("status") == _RETRACTED or (
            state.get("verification") == _CONTRADICTED
        )
        if voided and "voided" not in state:
            return DecodeError("its index state says retracted or contradicted and "
                               "gives no time for it (svt, oms_rdf:voided)")  # fmt: skip
        closing = "successor" in state or "voided" in state
        if closing != ("end" in state):
            why = "no system end (svt)" if closing else "no successor nor retraction"
            return DecodeError(f"its index state closes it with {why}; "
                               "the store writes both or neither")  # fmt: skip
        for field in ("end", "voided"):
            if field not in state:
                continue
            when = _millis(state[field])
            if when is None:
                return DecodeError(
                    f"its {field} time {state[field][:80]} is no xsd:dateTime with "
                    "a time zone, to the millisecond (as the store writes it, and "
                    "as its lookups compare it)"
                )
            if when < start:
                return TimeRangeError(
                    f"its {'system end' if field == 'end' else 'retraction'} "
                    f"{state[field]} comes before its system start ({start} ms)",
                    code=ErrorCode.RANGE,
                )
        if "earned" in state and _confidence(state["earned"]) is None:
            return DecodeError(
                f"its effective confidence {state['earned'][:80]} is no xsd:double "
                "in [0, 1], as the store writes it"
            )
        if closing and address in self.sealed:
            return PolicyError(
                f"its index state closes it, but its policy ({self.sealed[address]}) "
                "lets nothing supersede, retract or contradict it",
                code=ErrorCode.INVALIDATION_DENIED,
                path="$.invalidation_policy",
            )
        if closing and (above := self._sealed_above(address)) is not None:
            return PolicyError(
                f"its index state closes it, but grain {above[0][:12]}…, which it "
                f"derives from, has a subtree policy ({above[1]}) that lets nothing "
                "supersede, retract or contradict it",
                code=ErrorCode.INVALIDATION_DENIED,
                path="$.derived_from",
            )
        return None

    def _sealed_above(self, address: str) -> tuple[str, str] | None:
        """A derivation ancestor the store holds whose ``subtree`` policy lets
        nothing close the grain, with that policy; as the store's own
        operations find it (:func:`.protectors.subtree`, through the import's
        grains too). One the import brings may have come after the grain was
        closed, as the source's own operations allow: its backup restores."""
        grain = self.kept.get(address)
        if grain is None or not grain.get("derived_from"):
            return None
        reached: dict[str, int] = {}
        found = subtree(grain, self._find, reached)
        core = self.store.core
        for ancestor, hops in reached.items():  # what erasures kept of theirs
            if ancestor in self.store:
                found += marked(core, ancestor, ("subtree",), hops)
        for protector in found:
            held = protector.address in self.store
            if held and (seal := _seal(protector.policy)) is not None:
                return protector.address, seal
        return None

    def _find(self, address: str) -> Grain | None:
        found = self.kept.get(address)
        if found is None and address in self.store:
            found = self.store.get(address)
        return found

    def _successor(self, address: str, state: dict[str, str]) -> OmsError | None:
        """What a grain's successor must be: another grain, here, not older."""
        if "successor" not in state:
            return None
        successor = _address(state["successor"])
        if successor is None:
            return DecodeError(f"its successor {state['successor'][:80]} is no grain")
        if successor == address:
            return DecodeError("its index state says it is superseded by itself")
        start = self.starts.get(successor)
        if start is None and successor not in self.erased:
            if successor in self.store:
                start = system_from(self.store.get(successor))
            elif not self._erased_here(successor):
                return DecodeError(f"it is superseded by {successor[:12]}…, which "
                                   "neither the source nor the store holds")  # fmt: skip
        if start is not None and start < self.starts[address]:
            return TimeRangeError(
                f"it is superseded by {successor[:12]}…, whose system start "
                f"({start} ms) is before its own ({self.starts[address]} ms)",
                code=ErrorCode.RANGE,
            )
        end = _millis(state.get("end", ""))
        if start is not None and end is not None and end > start:
            return TimeRangeError(
                f"its system end ({end} ms) is after the system start of its "
                f"successor {successor[:12]}… ({start} ms): supersede closes a "
                "grain when its successor enters, so both would be held",
                code=ErrorCode.RANGE,
            )
        return None

    def _split(self, address: str, state: dict[str, str]) -> OmsError | None:
        """What a grain's ``oms:splitInto`` parts must be: other grains, here,
        entering when a change over a portion of its valid time closed it."""
        end = _millis(state.get("end", ""))
        for term in self.splits.get(address, ()):
            part = _address(term)
            if part is None or part == address:
                return DecodeError(
                    f"it is split into {term[:80]}, which is no other grain"
                )
            start = self.starts.get(part)
            if start is None and part in self.store:
                start = system_from(self.store.get(part))
            if (
                start is None
                and part not in self.erased
                and not self._erased_here(part)
            ):
                return DecodeError(f"it is split into {part[:12]}…, which neither "
                                   "the source nor the store holds")  # fmt: skip
            if start is not None and start != end:
                return TimeRangeError(
                    f"it is split into {part[:12]}…, which enters at {start} ms, "
                    f"not when it was closed ({end} ms): a change over a portion "
                    "writes its parts as it closes the grain",
                    code=ErrorCode.RANGE,
                )
        return None

    def _erased_here(self, address: str) -> bool:
        """Whether the store erased this grain (its tombstone)."""
        node = grain_iri(address)
        found = next(
            self.store.backend.quads(node, OMS.erasedAt, None, OMS.index), None
        )
        return found is not None

    def _circles(self) -> Iterator[str]:
        """The new grains on a circle of successions and splits (a grain is
        replaced by its successor and by each part it was split into)."""
        after: dict[str, list[str]] = {}
        for address in self.starts:
            successor = _address(self.states.get(address, {}).get("successor", ""))
            parts = [_address(t) for t in self.splits.get(address, ())]
            found = [a for a in (successor, *parts) if a is not None]
            if found:
                after[address] = found
        done: set[str] = set()
        for first in after:
            path: list[str] = []  # the grains being walked from ``first``, in order
            todo: list[tuple[str, int]] = [(first, 0)]
            seen: set[str] = set()
            while todo:
                node, depth = todo.pop()
                del path[depth:]
                if node in path:
                    yield from path[path.index(node) :]
                    continue
                if node in done or node in seen:
                    continue
                seen.add(node)
                path.append(node)
                todo += [(later, depth + 1) for later in after.get(node, ())]
            done |= seen


def _statuses(state: dict[str, str]) -> OmsError | None:
    """What the status and verification status must say of a grain's closing,
    as the store writes them: superseded with a successor, retracted or
    contradicted with the time of it, active and unverified otherwise."""
    status = state.get("status", _ACTIVE)
    contradicted = state.get("verification") == _CONTRADICTED
    says = {
        "successor": "successor" in state,
        "superseded": status == _SUPERSEDED,
        "voided": "voided" in state,
        "retracted or contradicted": status == _RETRACTED or contradicted,
    }
    if says["superseded"] and not says["successor"]:
        why = "superseded, with no successor"
    elif says["successor"] and status == _ACTIVE:
        why = "active, with a successor"
    elif says["voided"] != says["retracted or contradicted"]:
        why = (
            "retracted or contradicted at a time, with another status"
            if says["voided"]
            else "retracted or contradicted, with no time for it"
        )
    else:
        return None
    return DecodeError(f"its index state says it is {why}: the store never writes that")


def _seal(policy: Any) -> str | None:
    """The mode of a policy that lets nothing close its grain (``locked``, a
    ``hold``, a mode unknown here, which fails closed), as the refusal says it;
    None for another, a ``timed`` lock included (it may have been open)."""
    raw = policy.get("mode") if isinstance(policy, Mapping) else None
    mode = effective_mode(policy, 0)
    if raw != "timed" and mode in ("locked", "hold"):
        return mode if raw == mode else f"{raw!r}"
    return None


def _address(term: str) -> str | None:
    """The address of a grain node written as N-Triples (``<nih:sha-256;HEX>``);
    None for any other term."""
    found = _GRAIN_NODE.fullmatch(term)
    return None if found is None else found.group(1)


def _millis(term: str) -> int | None:
    """Epoch milliseconds of an ``xsd:dateTime`` literal written as N-Triples,
    with a time zone and to the millisecond at most; None for any other term
    (without a zone, or finer, SPARQL and the lookups would order it apart)."""
    found = _DATE_TIME.fullmatch(term)
    if found is None or _ZONED_TO_THE_MS.fullmatch(found.group(1)) is None:
        return None
    try:
        return to_millis(found.group(1))
    except OmsError:
        return None


def _confidence(term: str) -> float | None:
    """The value of an ``xsd:double`` literal in [0, 1] written as N-Triples;
    None for any other term."""
    found = _DOUBLE.fullmatch(term)
    if found is None:
        return None
    try:
        value = float(found.group(1))
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


_GRAIN_NODE = re.compile(rf"<{re.escape(NIH_PREFIX)}([0-9a-f]{{64}})>")
# The xsd:dateTime and xsd:double grammars (ASCII digits), the times with a zone
# and to the millisecond at most: what Python's readers take beyond them (week
# dates, compact forms, spaces, other scripts' digits) SPARQL does not.
_ZONED_TO_THE_MS = re.compile(
    r"-?\d{4,}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?(Z|[+-]\d\d:\d\d)", re.ASCII
)
_DOUBLE = re.compile(
    r'"([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"'
    r"\^\^<http://www\.w3\.org/2001/XMLSchema#double>",
    re.ASCII,
)
_DATE_TIME = re.compile(r'"([^"\\]*)"\^\^<http://www\.w3\.org/2001/XMLSchema#dateTime>')
