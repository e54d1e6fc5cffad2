"""Signed grains: did:key Ed25519 keys, COSE_Sign1 envelopes, selective disclosure.

- **did:key** (spec §22.4): ``did:key:z`` + base58btc(multicodec varint + key). Only
  Ed25519 (multicodec 0xed, varint ``ed 01``) is supported; any other key type is
  refused with ERR_SIGNATURE naming the multicodec found.
- **COSE_Sign1** (RFC 9052, spec §9): protected header ``{1: -8 (EdDSA), 4: kid,
  3: "application/vnd.mg+msgpack"}``, unprotected ``{"iat": seconds}``, payload =
  the whole inner blob (header included), signature over ``Sig_structure =
  ["Signature1", protected, h'', payload]`` (empty external AAD). ``kid`` is written
  as the DID's UTF-8 bytes (RFC 9052 wants a bstr); a text ``kid`` (the spec's
  example) is accepted when verifying, and so are alg -8 and -19. The signed flag
  (header bit 0) must be set in a wrapped blob and only there (ERR_SIGNED_MISMATCH).
  The content address is the inner blob's, so signing never changes it.
- **Quorum co-signatures** (``supersession_auth``, spec §8.3 leaves the format
  open): each entry is a COSE_Sign1 envelope with content type
  ``application/vnd.oms-rdf.supersession`` whose payload is the UTF-8 text
  ``oms-rdf:supersede:<old address>:<draft address>``, where the draft address is
  the content address of the new grain encoded *without* ``supersession_auth`` (and
  without the signed flag), so that signers can sign before the list is attached.
- **Selective disclosure** (spec §10): a disclosed view replaces chosen fields by
  ``_elided: {name: "sha256:<hex>"}`` (hash of the value's canonical MessagePack)
  and names the original in ``_disclosure_of``.

>>> key = generate_key(seed=bytes(32))
>>> key.did.startswith("did:key:z6Mk")
True
>>> from oms_rdf.codec.grain import Belief
>>> g = Belief("a", "b", "c", 0.5, created_at=0, signed=True)
>>> blob, did = verify_signature(sign(g.blob, key))
>>> (blob == g.blob, did == key.did)
(True, True)
"""

from __future__ import annotations

import hashlib
import io
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import cbor2
import msgpack
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

from ..errors import ErrorCode, SchemaError, SignatureError
from . import (
    FLAG_SIGNED,
    canonical_value,
    content_address,
    decode,
    encode,
    read_header,
)

__all__ = [
    "ELIDABLE",
    "SigningKey",
    "disclose",
    "elision_hash",
    "generate_key",
    "parse_did",
    "sign",
    "sign_supersession",
    "supersession_draft",
    "verify",
    "verify_disclosed",
    "verify_signature",
    "verify_supersession",
]

ED25519_CODEC = 0xED
ALG_EDDSA, ALG_ED25519 = -8, -19
GRAIN_CONTENT_TYPE = "application/vnd.mg+msgpack"
SUPERSESSION_CONTENT_TYPE = "application/vnd.oms-rdf.supersession"
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_INDEX = {c: i for i, c in enumerate(_B58)}
# Multicodec names of common key types, so a refusal can say what it found.
_KEY_CODECS = {
    0xE7: "secp256k1-pub",
    0x1200: "p256-pub",
    0x1201: "p384-pub",
    0xEC: "x25519-pub",
    0xED: "ed25519-pub",
    0x1205: "rsa-pub",
    0xEB: "bls12_381-g2-pub",
}


def b58encode(data: bytes) -> str:
    """Base58btc (Bitcoin alphabet), leading zero bytes as ``1``."""
    number = int.from_bytes(data, "big")
    out = ""
    while number:
        number, rest = divmod(number, 58)
        out = _B58[rest] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def b58decode(text: str) -> bytes:
    """Inverse of :func:`b58encode`.

    Raises:
        SignatureError: a character outside the base58btc alphabet.
    """
    number = 0
    for char in text:
        if char not in _B58_INDEX:
            raise SignatureError(f"{char!r} is not a base58btc character")
        number = number * 58 + _B58_INDEX[char]
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    return b"\0" * (len(text) - len(text.lstrip("1"))) + body


def _varint(data: bytes) -> tuple[int, int]:
    """Decode an unsigned LEB128 varint; return (value, bytes used)."""
    value = shift = 0
    for i, byte in enumerate(data[:9]):
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, i + 1
        shift += 7
    raise SignatureError("the multicodec prefix is not a complete varint")


def did_for(public_key: bytes) -> str:
    """Return the did:key of a raw 32-byte Ed25519 public key."""
    return "did:key:z" + b58encode(bytes([ED25519_CODEC, 0x01]) + public_key)


def parse_did(did: str) -> Ed25519PublicKey:
    """Return the Ed25519 public key a did:key names.

    Raises:
        SignatureError: ERR_SIGNATURE for another DID method, another multibase, or
            a key type other than Ed25519 (named in the message).

    >>> key = parse_did("did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK")
    >>> key.public_bytes_raw().hex()[:16]
    '2e6fcce36701dc79'
    """
    if not isinstance(did, str) or not did.startswith("did:key:"):
        raise SignatureError(f"only did:key DIDs resolve here; found {did!r}")
    multibase = did.removeprefix("did:key:")
    if not multibase.startswith("z"):
        raise SignatureError(
            f"did:key must use base58btc multibase 'z'; found {multibase[:1]!r}"
        )
    data = b58decode(multibase[1:])
    codec, used = _varint(data)
    if codec != ED25519_CODEC:
        name = _KEY_CODECS.get(codec, "unknown")
        raise SignatureError(
            f"{did} is a {name} key (multicodec 0x{codec:x}); only Ed25519 (0xed) is supported"
        )
    raw = data[used:]
    if len(raw) != 32:
        raise SignatureError(f"an Ed25519 key has 32 bytes; {did} carries {len(raw)}")
    return Ed25519PublicKey.from_public_bytes(raw)


@dataclass(frozen=True, slots=True)
class SigningKey:
    """An Ed25519 private key and its did:key."""

    private: Ed25519PrivateKey
    did: str

    @classmethod
    def from_private_bytes(cls, raw: bytes) -> SigningKey:
        """Load a raw 32-byte Ed25519 private key (the seed)."""
        private = Ed25519PrivateKey.from_private_bytes(raw)
        public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return cls(private, did_for(public))

    def private_bytes(self) -> bytes:
        """Return the raw 32-byte private key; keep it secret."""
        return self.private.private_bytes(
            Encoding.Raw, PrivateFormat.Raw, NoEncryption()
        )

    def sign_bytes(self, message: bytes) -> bytes:
        """Return the Ed25519 signature of ``message``."""
        return self.private.sign(message)

    def __repr__(self) -> str:
        return f"<SigningKey {self.did}>"


def generate_key(seed: bytes | None = None) -> SigningKey:
    """Return a new Ed25519 key; a 32-byte ``seed`` makes it deterministic."""
    if seed is None:
        private = Ed25519PrivateKey.generate()
        seed = private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    elif len(seed) != 32:
        raise SignatureError(f"an Ed25519 seed has 32 bytes; found {len(seed)}")
    return SigningKey.from_private_bytes(seed)


# --- COSE_Sign1 -------------------------------------------------------------------


def _envelope(
    payload: bytes, key: SigningKey, content_type: str, iat: int | None
) -> bytes:
    protected = cbor2.dumps(
        {1: ALG_EDDSA, 3: content_type, 4: key.did.encode()}, canonical=True
    )
    to_sign = cbor2.dumps(["Signature1", protected, b"", payload], canonical=True)
    unprotected = {"iat": int(time.time()) if iat is None else iat}
    body = [protected, unprotected, payload, key.sign_bytes(to_sign)]
    return cbor2.dumps(cbor2.CBORTag(18, body), canonical=True)


def _one_item(data: bytes, what: str) -> Any:
    """The one CBOR item ``data`` holds: bytes after it would travel unsigned
    beside the signature, so they are refused."""
    stream = io.BytesIO(data)
    try:
        item = cbor2.CBORDecoder(stream).decode()
    except (cbor2.CBORDecodeError, ValueError, TypeError, EOFError) as exc:
        raise SignatureError(f"{what} is not CBOR: {exc}") from exc
    if stream.tell() != len(data):
        raise SignatureError(
            f"{what} holds {len(data) - stream.tell()} bytes after its one CBOR item"
        )
    return item


def _open(envelope: bytes, content_type: str) -> tuple[bytes, str]:
    """Check a COSE_Sign1 envelope; return (payload, signer DID)."""
    item = _one_item(envelope, "a CBOR COSE_Sign1 envelope")
    if isinstance(item, cbor2.CBORTag):
        if item.tag != 18:
            raise SignatureError(f"CBOR tag {item.tag} is not COSE_Sign1 (18)")
        item = item.value
    if not (isinstance(item, list | tuple) and len(item) == 4):
        raise SignatureError("a COSE_Sign1 envelope is an array of 4 items")
    protected, _unprotected, payload, signature = item
    if not all(isinstance(x, bytes) for x in (protected, payload, signature)):
        raise SignatureError(
            "COSE_Sign1 protected header, payload and signature are byte strings"
        )
    header = _one_item(protected, "the protected header") if protected else {}
    if not all(isinstance(h, Mapping) for h in (header, _unprotected)):
        raise SignatureError("the protected and unprotected headers are maps")
    alg = header.get(1)
    if alg not in (ALG_EDDSA, ALG_ED25519):
        raise SignatureError(
            f"algorithm {alg!r} is not supported; EdDSA (-8) or Ed25519 (-19)"
        )
    kid = header.get(4)
    did = kid.decode("utf-8", "replace") if isinstance(kid, bytes) else kid
    if not isinstance(did, str):
        raise SignatureError("protected header has no kid naming the signer's DID")
    if header.get(3, content_type) != content_type:
        raise SignatureError(
            f"content type {header.get(3)!r}, expected {content_type!r}"
        )
    public = parse_did(did)
    try:
        public.verify(
            signature,
            cbor2.dumps(["Signature1", protected, b"", payload], canonical=True),
        )
    except InvalidSignature:
        raise SignatureError(
            f"the signature does not verify with the key of {did}"
        ) from None
    return payload, did


def sign(blob: bytes, key: SigningKey, /, *, iat: int | None = None) -> bytes:
    """Wrap a grain blob in a COSE_Sign1 envelope signed by ``key``.

    Raises:
        SignatureError: ERR_SIGNED_MISMATCH when the blob's signed flag (header bit 0)
            is not set: encode it with ``signed=True`` first (spec §9.2).
    """
    _signed_grain(
        blob, "encode it with signed=True so that its address says it travels signed"
    )
    return _envelope(blob, key, GRAIN_CONTENT_TYPE, iat)


def verify_signature(envelope: bytes, /) -> tuple[bytes, str]:
    """Verify the COSE_Sign1 envelope of a signed grain; return (blob, signer DID).

    Raises:
        SignatureError: ERR_SIGNATURE for a bad envelope, key or signature;
            ERR_SIGNED_MISMATCH when the inner blob's signed flag is not set.
        DecodeError, SchemaError: the inner blob is not a valid grain.
    """
    blob, did = _open(envelope, GRAIN_CONTENT_TYPE)
    _signed_grain(blob, "a grain in a COSE envelope must say so in its header")
    return blob, did


verify = verify_signature  # the design's name: oms.signing.verify(envelope)


def _signed_grain(blob: bytes, fix: str) -> None:
    """Check the signed-flag invariant (spec §9.2), then the grain itself."""
    if not read_header(blob).flags & FLAG_SIGNED:
        raise SignatureError(
            f"the blob's signed flag (header bit 0) is not set; {fix}",
            code=ErrorCode.SIGNED_MISMATCH,
        )
    decode(blob)


def is_envelope(data: bytes) -> bool:
    """Whether bytes look like a COSE_Sign1 envelope (CBOR tag 18 or a 4-array)."""
    return data[:1] in (b"\xd2", b"\x84")


# --- quorum co-signatures -----------------------------------------------------------


def supersession_draft(fields: Mapping[str, Any]) -> str:
    """The address co-signers sign: the new grain without ``supersession_auth``."""
    draft = {k: v for k, v in fields.items() if k != "supersession_auth"}
    return content_address(encode(draft))


def _supersession_payload(old: str, draft: str) -> bytes:
    return f"oms-rdf:supersede:{old}:{draft}".encode()


def sign_supersession(
    old: str, new_fields: Mapping[str, Any], key: SigningKey, *, iat: int | None = None
) -> bytes:
    """Return one ``supersession_auth`` entry: ``key`` approves ``old`` → ``new_fields``."""
    return _envelope(
        _supersession_payload(old, supersession_draft(new_fields)),
        key,
        SUPERSESSION_CONTENT_TYPE,
        iat,
    )


def verify_supersession(entry: Any, old: str, draft: str) -> str:
    """Verify one ``supersession_auth`` entry; return its signer's DID.

    Raises:
        SignatureError: not a valid co-signature of this supersession.
    """
    if not isinstance(entry, bytes):
        raise SignatureError(
            f"a supersession_auth entry is COSE_Sign1 bytes; found {type(entry).__name__}"
        )
    payload, did = _open(entry, SUPERSESSION_CONTENT_TYPE)
    if payload != _supersession_payload(old, draft):
        raise SignatureError(
            f"{did} signed another supersession, not {old[:12]}… → this grain"
        )
    return did


# --- selective disclosure (spec §10) --------------------------------------------------

# Two closed lists of field names (spec §10.2), several to a line so that both fit
# on a screen, as the spec's table does; one name a line would take 45 lines.
# fmt: off
ELIDABLE = frozenset({
    "subject", "object", "user_id", "namespace", "provenance_chain", "context",
    "structural_tags", "description", "criteria", "criteria_structured", "parent_goals",
    "state_reason", "satisfaction_evidence", "delegate_to", "delegate_from",
    "rollback_on_failure", "observer_id", "observer_model", "frame_id", "sync_group",
})
NOT_ELIDABLE = frozenset({
    "type", "relation", "confidence", "created_at", "goal_state", "source_type", "priority",
    "observer_type", "observation_mode", "observation_scope", "compression_ratio",
})
# fmt: on


def elision_hash(value: Any) -> str:
    """Return ``"sha256:" + hex(sha256(canonical MessagePack of value))``.

    >>> elision_hash("alice-123")
    'sha256:48f1cf08a5b4ebe54182773c4345c19fb3a069740daeba7c4707b0e790745280'
    """
    canonical = canonical_value(value)
    return (
        "sha256:"
        + hashlib.sha256(msgpack.packb(canonical, use_bin_type=True)).hexdigest()
    )


def disclose(
    fields: Mapping[str, Any], address: str, elide: Iterable[str]
) -> dict[str, Any]:
    """Return the disclosed view of a grain with ``elide`` replaced by their hashes.

    Raises:
        SchemaError: a field the spec marks as not elidable, an unknown field name,
            or a field the grain does not have.
    """
    names = list(elide)
    view = dict(fields)
    elided = dict(view.get("_elided", {}))
    for name in names:
        if name in NOT_ELIDABLE or name not in ELIDABLE:
            why = (
                "must stay visible"
                if name in NOT_ELIDABLE
                else "is not classified as elidable"
            )
            raise SchemaError(
                f"{name!r} {why} (spec §10.2); elidable: {sorted(ELIDABLE)}",
                path=f"$.{name}",
            )
        if name not in view:
            raise SchemaError(
                f"the grain has no field {name!r} to elide", path=f"$.{name}"
            )
        elided[name] = elision_hash(view.pop(name))
    view["_elided"] = elided
    view["_disclosure_of"] = address
    return view


def verify_disclosed(view: Mapping[str, Any], name: str, value: Any) -> None:
    """Check that ``value`` is the one the view elided as ``name``.

    Raises:
        SchemaError: the view did not elide ``name``.
        SignatureError: ERR_INTEGRITY when the value does not hash to the elided hash.
    """
    expected = view.get("_elided", {}).get(name)
    if expected is None:
        raise SchemaError(f"the view does not elide {name!r}", path=f"$._elided.{name}")
    actual = elision_hash(value)
    if actual != expected:
        raise SignatureError(
            f"the revealed {name!r} hashes to {actual}, the view says {expected}",
            code=ErrorCode.INTEGRITY,
            path=f"$._elided.{name}",
        )
