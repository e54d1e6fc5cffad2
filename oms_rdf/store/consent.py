"""Whose withdrawal withdraws a consent (spec §5 Consent).

A withdrawal is a Consent grain with ``is_withdrawal`` true that names the
consent it withdraws (``prior_consent``). Honouring one erases every grain
whose ``processing_basis`` is that consent, in any namespace, so it must be the
consent's own: the same data subject (``subject_did``) taking back what it gave
the same grantee (``grantee_did``). Another party's withdrawal, which anyone who
knows a consent's address could write, is refused where it comes in (put,
put_many, a transaction, an import over a store that holds the consent). A
withdrawal of a consent the store does not hold withdraws nothing until the
consent comes: then it is honoured if it is the consent's own.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyoxigraph import DefaultGraph, Literal, NamedNode

from ..codec.grain import Grain
from ..codec.schema import CONSENT
from ..errors import ErrorCode, PolicyError
from ..rdf.mapping import address_of
from ..rdf.vocab import FIELD_NS
from .core import Core

__all__ = ["foreign_withdrawal", "is_withdrawal", "withdrawals_of", "withdraws"]

_PARTIES = ("subject_did", "grantee_did")
_PRIOR_CONSENT = NamedNode(FIELD_NS + "prior_consent")
_GRAIN_LAYER = DefaultGraph()  # only the store writes there


def withdrawals_of(
    core: Core, consent: str, consents: Mapping[str, Grain] = {}
) -> list[Grain]:
    """The stored withdrawals of ``consent`` that are its own (``consents``:
    arriving now, the consent among them). Read in the grain layer only: a
    belief's triple withdraws nothing, nor does a belief's unknown key of the
    same name (it is no Consent grain)."""
    found = []
    marks = core.backend.quads(None, _PRIOR_CONSENT, Literal(consent), _GRAIN_LAYER)
    for quad in list(marks):
        if isinstance(quad.subject, NamedNode):
            grain = core.get(address_of(quad.subject))
            if withdraws(core, grain, consents):
                found.append(grain)
    return found


def is_withdrawal(grain: Grain) -> bool:
    """Whether a grain is a Consent grain that withdraws one."""
    return grain.type_byte == CONSENT.byte and grain.get("is_withdrawal") is True


def withdraws(
    core: Core, withdrawal: Grain, consents: Mapping[str, Grain] = {}
) -> bool:
    """Whether ``withdrawal`` withdraws the consent it names: a Consent grain
    stored (or among ``consents``, arriving with it) of the same parties."""
    if not is_withdrawal(withdrawal):
        return False
    consent = _consent(core, withdrawal, consents)
    return consent is not None and _same_parties(consent, withdrawal)


def foreign_withdrawal(
    core: Core, grain: Grain, consents: Mapping[str, Grain] = {}
) -> PolicyError | None:
    """The refusal of a withdrawal of a consent held here (stored, or among
    ``consents``) that is not that consent's own; None for any other grain."""
    if not is_withdrawal(grain):
        return None
    consent = _consent(core, grain, consents)
    if consent is None or _same_parties(consent, grain):
        return None
    given = ", ".join(f"{k} {consent.get(k)!r}" for k in _PARTIES)
    found = ", ".join(f"{k} {grain.get(k)!r}" for k in _PARTIES)
    return PolicyError(
        f"a withdrawal is its consent's own: consent {consent.address[:12]}… was "
        f"given with {given}; this withdrawal has {found}",
        code=ErrorCode.INVALIDATION_DENIED,
        path="$.prior_consent",
    )


def _consent(
    core: Core, withdrawal: Grain, consents: Mapping[str, Grain]
) -> Grain | None:
    """The consent a withdrawal names: arriving with it, made by the open
    transaction, or stored."""
    prior = withdrawal.get("prior_consent")
    if not isinstance(prior, str):
        return None
    pending = core.pending
    found = consents.get(prior) or (pending.made.get(prior) if pending else None)
    if found is None and prior in core:
        found = core.get(prior)
    return found


def _same_parties(consent: Grain, withdrawal: Grain) -> bool:
    return consent.type_byte == CONSENT.byte and all(
        consent.get(k) == withdrawal.get(k) for k in _PARTIES
    )
