"""Protection that reaches further than a grain's own policy: through inheritance
(subtree, lineage, goals moved on their own), portions of valid time, merges,
transactions and signatures. Each case is hand-derived from spec §8.

After every refusal the store must be exactly as it was.
"""

from __future__ import annotations

import io
from typing import Any

import pytest

import oms_rdf as oms
from oms_rdf.codec import signing
from oms_rdf.codec.grain import Grain
from oms_rdf.store import GrainStore
from tests.test_policy import DAY, T0, belief, refused, snapshot

LINEAGE_SOFT = {"mode": "soft_locked", "scope": "lineage"}
LOCKED = {"mode": "locked"}


@pytest.fixture
def store() -> GrainStore:
    return GrainStore(clock=lambda: T0 + 100 * DAY)


def spanned(obj: str, t: int, **kw: Any) -> dict[str, Any]:
    """A belief valid over days 1 to 10."""
    return belief(obj, t, valid_from=T0 + DAY, valid_to=T0 + 10 * DAY, **kw)


def goal(state: str, t: int, **kw: Any) -> dict[str, Any]:
    return {"type": "goal", "description": "ship it", "goal_state": state,
            "created_at": t, **kw}  # fmt: skip


# --- the supersession-in-disguise rule sees inherited protection (§8.5) ----------


def test_a_copy_of_a_belief_protected_through_its_lineage_is_refused(
    store: GrainStore,
) -> None:
    a = store.put(belief("a", invalidation_policy=LINEAGE_SOFT))
    b = store.supersede(a, belief("b", T0 + 1), justification="first change")
    refused(store, lambda: store.contradict(b), "lineage")  # b is protected...
    # ...so a current copy of its claim beside it is a supersession in disguise.
    refused(
        store,
        lambda: store.put(belief("c", T0 + 2, derived_from=[b])),
        "disguise|supersede",
    )


def test_a_copy_of_a_belief_protected_as_a_subtree_is_refused(
    store: GrainStore,
) -> None:
    root = store.put(belief("root", subject="root",
                            invalidation_policy={"mode": "locked", "scope": "subtree"}))  # fmt: skip
    child = store.put(belief("child", T0 + 1, derived_from=[root]))
    refused(store, lambda: store.put(belief("copy", T0 + 2, derived_from=[child])))


def test_a_copy_made_in_the_same_transaction_is_refused(store: GrainStore) -> None:
    before = snapshot(store)
    with pytest.raises(oms.PolicyError) as info:
        with store.transaction() as tx:
            a = tx.put(belief("a", invalidation_policy=LOCKED))
            tx.put(belief("b", T0 + 1, derived_from=[a]))
    assert info.value.code == oms.ErrorCode.INVALIDATION_DENIED
    assert snapshot(store) == before


# --- portions of valid time keep the lineage (§8.4) -------------------------------


def test_a_successor_over_a_portion_and_the_pieces_keep_the_lineage(
    store: GrainStore,
) -> None:
    a = store.put(spanned("a", T0, invalidation_policy=LINEAGE_SOFT))
    new = store.supersede(a, belief("n", T0 + 1), justification="fix",
                          valid_from=T0 + 3 * DAY, valid_to=T0 + 5 * DAY)  # fmt: skip
    pieces = [g.address for g in store.derived(a) if g.address != new]
    assert len(pieces) == 2  # days 1-3 and 5-10 of a
    refused(store, lambda: store.contradict(new), "lineage")
    for piece in pieces:  # each carries a's own policy, and is in its lineage
        refused(store, lambda p=piece: store.contradict(p), "soft_locked")
    store.contradict(new, reason="reviewed")  # with a reason, as for a itself


def test_the_pieces_of_a_portion_retracted_keep_an_inherited_lineage(
    store: GrainStore,
) -> None:
    a = store.put(spanned("a", T0, invalidation_policy=LINEAGE_SOFT))
    b = store.supersede(a, spanned("b", T0 + 1), justification="first change")
    store.retract(b, reason="wrong in days 3-5",
                  valid_from=T0 + 3 * DAY, valid_to=T0 + 5 * DAY)  # fmt: skip
    pieces = [g.address for g in store.derived(b)]
    assert len(pieces) == 2
    for piece in pieces:
        refused(store, lambda p=piece: store.contradict(p), "lineage")


def test_a_portion_of_a_superseded_grain_is_not_retracted(store: GrainStore) -> None:
    a = store.put(spanned("a", T0))
    store.supersede(a, spanned("b", T0 + 1, invalidation_policy=LOCKED))
    before = snapshot(store)
    with pytest.raises(oms.PolicyError) as info:  # its pieces would come back current
        store.retract(a, reason="x", valid_from=T0 + 3 * DAY, valid_to=T0 + 5 * DAY)
    assert info.value.code == oms.ErrorCode.CONFLICT
    assert "not current" in str(info.value)
    assert snapshot(store) == before


# --- goals moved on their own keep the policy, however far (§8.6) ---------------


def test_a_goal_moved_on_its_own_twice_keeps_the_first_policy(
    store: GrainStore,
) -> None:
    g = store.put(goal("active", T0, invalidation_policy=LOCKED,
                       allowed_transitions=["satisfied", "active"]))  # fmt: skip
    done = store.supersede(g, goal("satisfied", T0 + 1, satisfaction_evidence=["e"]))
    again = store.supersede(done, goal("active", T0 + 2))  # allowed on its own
    refused(store, lambda: store.supersede(again, goal("failed", T0 + 3)), "replaced")
    refused(store, lambda: store.retract(again, reason="x"))


def test_a_goal_moved_on_its_own_over_a_portion_keeps_the_policy(
    store: GrainStore,
) -> None:
    g = store.put(goal("active", T0, invalidation_policy=LOCKED,
                       allowed_transitions=["satisfied"],
                       valid_from=T0, valid_to=T0 + 10 * DAY))  # fmt: skip
    done = store.supersede(g, goal("satisfied", T0 + 1, satisfaction_evidence=["e"]),
                           valid_from=T0 + 5 * DAY)  # fmt: skip
    weaker = goal("active", T0 + 2, description="less", valid_from=T0 + 5 * DAY)
    refused(store, lambda: store.supersede(done, weaker), "replaced")


# --- merges: one grain superseding two protected ones ------------------------------


def test_two_soft_locked_beliefs_merge_with_a_justification(store: GrainStore) -> None:
    p = store.put(belief("p", invalidation_policy={"mode": "soft_locked"}))
    q = store.put(belief("q", T0 + 1, invalidation_policy={"mode": "soft_locked"}))
    merged = belief("pq", T0 + 2, derived_from=[p, q])
    refused(store, lambda: store.supersede(p, merged))  # no justification
    first = store.supersede(p, merged, justification="one rule")
    store.supersede(q, store.get(first), justification="one rule")
    assert [g.address for g in store.beliefs("agent")] == [first]


def test_a_merge_may_not_take_in_a_locked_belief(store: GrainStore) -> None:
    p = store.put(belief("p", invalidation_policy={"mode": "soft_locked"}))
    q = store.put(belief("q", T0 + 1, invalidation_policy=LOCKED))
    merged = belief("pq", T0 + 2, derived_from=[p, q])
    refused(store, lambda: store.supersede(p, merged, justification="one rule"))


# --- a signature speaks for the supersession it signs (§8.3 delegated) -----------


def test_a_delegated_grain_yields_only_to_a_signed_successor_of_it(
    store: GrainStore,
) -> None:
    key = signing.generate_key(seed=bytes(range(32)))
    a = store.put(belief("a", invalidation_policy={"mode": "delegated",
                                                   "authorized": [key.did]}))  # fmt: skip

    def signed(fields: dict[str, Any]) -> bytes:
        return signing.sign(Grain.from_dict(fields, signed=True).blob, key)

    elsewhere = signed(
        belief("x", T0 + 1, subject="unrelated")
    )  # signed for another use
    refused(store, lambda: store.supersede(a, elsewhere), "delegated")
    other = store.put(belief("o", subject="other"))
    aimed_elsewhere = signed(belief("b", T0 + 1, derived_from=[other]))
    refused(store, lambda: store.supersede(a, aimed_elsewhere), "delegated")
    b = store.supersede(a, signed(belief("b", T0 + 1, derived_from=[a])))
    assert store.status(a).superseded_by == b


# --- fail-closed (§8.3) ------------------------------------------------------------


@pytest.mark.parametrize("policy", [{}, {"scope": "grain"}, {"mode": None}])
def test_a_policy_without_a_mode_is_locked(store: GrainStore, policy: Any) -> None:
    a = store.put(belief("a", invalidation_policy=policy))
    refused(store, lambda: store.supersede(a, belief("b", T0 + 1), justification="x"))
    refused(store, lambda: store.retract(a, reason="x"))


# --- erasing a grain between a policy and what it protects (§8.4) -----------------

FORMATS = ("trig", "nquads", "mg", "jsonl", "jsonld")


def _travelled(store: GrainStore, fmt: str) -> GrainStore:
    out = io.BytesIO()
    store.export(out, format=fmt)
    copy = GrainStore(clock=lambda: T0 + 100 * DAY)
    copy.import_(io.BytesIO(out.getvalue()), format=fmt)
    return copy


@pytest.mark.parametrize("fmt", FORMATS)
def test_erasing_a_version_between_keeps_the_lineage_protected(
    store: GrainStore, fmt: str
) -> None:
    """A lineage policy covers the whole chain (spec §8.4): erasing a version in
    the middle, which no hold covers, must not lift it from the versions after
    it, here or in a copy of the store."""
    a = store.put(belief("a", invalidation_policy=LINEAGE_SOFT))
    b = store.supersede(a, belief("b", T0 + 1), justification="first change")
    c = store.supersede(b, belief("c", T0 + 2), justification="second change")
    store.erase(b, reason="the person asked")
    assert store.status(c).protected_by == (a,)
    for where in (store, _travelled(store, fmt)):
        refused(where, lambda w=where: w.retract(c, reason=" "), "lineage")
        where.retract(c, reason="a justified change")  # soft: a reason overrides


@pytest.mark.parametrize("fmt", FORMATS)
def test_erasing_a_derived_grain_between_keeps_the_subtree_protected(
    store: GrainStore, fmt: str
) -> None:
    root = store.put(belief("root", subject="root",
                            invalidation_policy={"mode": "locked", "scope": "subtree"}))  # fmt: skip
    middle = store.put(belief("middle", T0 + 1, subject="m", derived_from=[root]))
    leaf = store.put(belief("leaf", T0 + 2, subject="l", derived_from=[middle]))
    store.erase(middle, reason="the person asked")
    for where in (store, _travelled(store, fmt)):
        refused(where, lambda w=where: w.contradict(leaf), "subtree")
        refused(where, lambda w=where: w.retract(leaf, reason="gone"), "subtree")


def test_an_erased_policy_protects_nothing_after_it(store: GrainStore) -> None:
    """The policy is the protecting grain's: erased too, it protects no more."""
    root = store.put(belief("root", subject="root",
                            invalidation_policy={"mode": "locked", "scope": "subtree"}))  # fmt: skip
    middle = store.put(belief("middle", T0 + 1, subject="m", derived_from=[root]))
    leaf = store.put(belief("leaf", T0 + 2, subject="l", derived_from=[middle]))
    store.erase(middle, reason="the person asked")
    store.erase(root, reason="the person asked")
    store.contradict(leaf)
    assert store.status(leaf).verification == "contradicted"


def test_a_grain_that_joins_after_the_erasure_inherits_the_protection(
    store: GrainStore,
) -> None:
    """A successor or a derived grain written after the erasure reaches the
    policy through the grain the erasure marked, as it would have through the
    erased one."""
    a = store.put(belief("a", invalidation_policy=LINEAGE_SOFT))
    b = store.supersede(a, belief("b", T0 + 1), justification="first change")
    c = store.supersede(b, belief("c", T0 + 2), justification="second change")
    store.erase(b, reason="the person asked")
    d = store.supersede(c, belief("d", T0 + 3), justification="third change")
    refused(store, lambda: store.retract(d, reason=" "), "lineage")
    root = store.put(belief("root", subject="root",
                            invalidation_policy={"mode": "soft_locked", "scope": "subtree"}))  # fmt: skip
    middle = store.put(belief("middle", T0 + 1, subject="m", derived_from=[root]))
    leaf = store.put(belief("leaf", T0 + 2, subject="l", derived_from=[middle]))
    store.erase(middle, reason="the person asked")
    later = store.put(belief("later", T0 + 3, subject="n", derived_from=[leaf]))
    refused(store, lambda: store.contradict(later), "subtree")


@pytest.mark.parametrize("fmt", ["nquads", "mg", "jsonl", "trig"])
def test_a_copy_that_holds_the_erased_grain_takes_the_later_export(
    store: GrainStore, fmt: str
) -> None:
    """The marks are the erasing store's: a copy made before the erasure still
    holds the erased grain, and takes the later export as the same history.
    A mark naming a grain erased since goes with it."""
    root = store.put(belief("root", subject="root",
                            invalidation_policy={"mode": "locked", "scope": "subtree"}))  # fmt: skip
    middle = store.put(belief("middle", T0 + 1, subject="m", derived_from=[root]))
    leaf = store.put(belief("leaf", T0 + 2, subject="l", derived_from=[middle]))
    copy = _travelled(store, fmt)
    store.erase(middle, reason="the person asked")
    out = io.BytesIO()
    store.export(out, format=fmt)
    copy.import_(io.BytesIO(out.getvalue()), format=fmt)
    assert middle in copy and copy.status(leaf).protected_by == ()
    assert store.status(leaf).protected_by == (root,)
    store.erase(root, reason="the person asked")
    assert store.status(leaf).protected_by == ()


def test_a_lock_kept_by_an_erasure_bounds_an_import_too(store: GrainStore) -> None:
    """An import may not bring, closed, a grain derived from one an erasure
    marked with a locked subtree root, as retract may not close it."""
    locked = {"mode": "locked", "scope": "subtree"}
    root = store.put(belief("root", subject="root", invalidation_policy=locked))
    middle = store.put(belief("middle", T0 + 1, subject="m", derived_from=[root]))
    marked = belief("marked", T0 + 2, subject="k", derived_from=[middle])
    store.put(marked)
    store.erase(middle, reason="the person asked")
    elsewhere = GrainStore(clock=lambda: T0 + 100 * DAY)
    elsewhere.put(marked)
    leaf = elsewhere.put(belief("leaf", T0 + 3, subject="l",
                                derived_from=[Grain.from_dict(marked).address]))  # fmt: skip
    elsewhere.retract(leaf, reason="closed there, where no root was")
    out = io.BytesIO()
    elsewhere.export(out, format="jsonl")
    refused(store, lambda: store.import_(io.BytesIO(out.getvalue()), format="jsonl"),
            "subtree policy")  # fmt: skip


def test_a_mark_reaches_no_further_than_the_hops_of_the_grain_it_marked(
    store: GrainStore,
) -> None:
    """The spec's 16 hops: a grain 20 hops below a locked root is not covered;
    after an erasure near the root, the marks keep protection within 16 hops,
    and say how far their root is, so that a later grain is covered as far."""
    root = store.put(belief("root", subject="root",
                            invalidation_policy={"mode": "locked", "scope": "subtree"}))  # fmt: skip
    chain = [root]
    for i in range(1, 21):
        chain.append(store.put(belief(f"g{i}", T0 + i, subject=f"s{i}",
                                      derived_from=[chain[-1]])))  # fmt: skip
    store.erase(chain[2], reason="the person asked")
    assert store.status(chain[16]).protected_by == (root,)
    assert store.status(chain[17]).protected_by == ()
    refused(store, lambda: store.contradict(chain[16]), "subtree")
    store.contradict(chain[17])  # 17 hops: beyond reach
    later = store.put(belief("later", T0 + 30, subject="t", derived_from=[chain[15]]))
    refused(store, lambda: store.contradict(later), "subtree")  # 16 hops
    further = store.put(
        belief("further", T0 + 31, subject="u", derived_from=[chain[16]])
    )
    store.contradict(further)  # 17 hops
