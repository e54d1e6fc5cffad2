"""The signatures an RDF export brings with its grains, checked as put checks them.

A signed grain (header bit 0) travels with its COSE_Sign1 envelope in graph
``oms:blobs``, and the index names its signer (``oms:signedBy``), which the store
reads from the envelope when it writes the grain. An import writes those quads
as they are, so each is held to that: the envelope verifies and signs the
grain's own bytes (:func:`~oms_rdf.store.admission.accept`), the signer is the
envelope's, and a grain without the flag has neither (spec §9.2).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..codec.grain import Grain
from ..errors import ErrorCode, OmsError, SignatureError
from .records import term_text

if TYPE_CHECKING:
    from ..store import GrainStore

__all__ = ["SignatureCheck"]


class SignatureCheck:
    """Feed it the new grains, their envelopes and their signers; then
    :meth:`refusals`."""

    def __init__(self, store: GrainStore) -> None:
        self.store = store
        self.flagged: set[str] = set()  # new grains whose signed flag is set
        self.plain: set[str] = set()  # ... whose flag is clear
        self.envelopes: dict[str, list[object]] = {}  # address -> envelope terms
        self.signers: dict[str, list[str]] = {}  # address -> oms:signedBy texts

    def grain(self, grain: Grain) -> None:
        """Take one new grain of the import."""
        (self.flagged if grain.signed else self.plain).add(grain.address)

    def envelope(self, address: str, term: object) -> None:
        """Take one ``oms:envelope`` of a grain."""
        self.envelopes.setdefault(address, []).append(term)

    def signer(self, address: str, term: object) -> None:
        """Take one ``oms:signedBy`` of a grain."""
        self.signers.setdefault(address, []).append(term_text(term))

    def refusals(self) -> Iterator[tuple[str, OmsError]]:
        """The new grains whose envelope or signer put would not write, each
        with the reason."""
        for address in sorted(self.plain):
            if address in self.envelopes or address in self.signers:
                yield (
                    address,
                    _mismatch(
                        "an envelope or a signer (oms:envelope, oms:signedBy) for a "
                        "grain whose signed flag (header bit 0) is clear"
                    ),
                )
        for address in sorted(self.flagged):
            error = self._signed(address)
            if error is not None:
                yield address, error

    def _signed(self, address: str) -> OmsError | None:
        envelopes = self.envelopes.get(address, [])
        if len(envelopes) != 1:
            return _mismatch(
                f"{len(envelopes)} COSE_Sign1 envelopes (oms:envelope) for a grain "
                "whose signed flag (header bit 0) is set; expected one"
            )
        try:
            data = base64.b64decode(term_text(envelopes[0]), validate=True)
            signed, signature = self.store.accept(data)
        except (OmsError, binascii.Error, ValueError) as exc:
            error = exc if isinstance(exc, OmsError) else SignatureError(str(exc))
            return error
        if signed.address != address or signature is None:
            return SignatureError(
                f"its envelope signs {signed.address[:12]}…, not this grain",
                code=ErrorCode.SIGNATURE,
            )
        if self.signers.get(address) != [signature.did]:
            return SignatureError(
                f"its index names the signer {self.signers.get(address)}, but its "
                f"envelope was signed by {signature.did}",
                code=ErrorCode.SIGNATURE,
            )
        return None


def _mismatch(what: str) -> SignatureError:
    return SignatureError(what, code=ErrorCode.SIGNED_MISMATCH)
