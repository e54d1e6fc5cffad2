"""did:key, COSE_Sign1, the signed-flag invariant, selective disclosure."""

from __future__ import annotations

from typing import Any

import cbor2
import pytest

import oms_rdf as oms
from oms_rdf.codec import signing
from oms_rdf.errors import ErrorCode, SignatureError

SPEC_DID = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"


@pytest.fixture
def key() -> signing.SigningKey:
    return signing.generate_key(seed=bytes(range(32)))


@pytest.fixture
def signed_grain() -> oms.Grain:
    return oms.Belief(
        "alice", "works_at", "Acme", 0.9, created_at=1_700_000_000_000, signed=True
    )


def test_spec_did_parses() -> None:
    # Digest §9.4: prefix ed01, then this public key.
    public = signing.parse_did(SPEC_DID).public_bytes_raw()
    assert (
        public.hex()
        == "2e6fcce36701dc791488e0d0b1745cc1e33a4c1c9fcc41c63bd343dbbe0970e6"
    )
    assert signing.did_for(public) == SPEC_DID


def test_seeded_keys_are_deterministic(key: signing.SigningKey) -> None:
    again = signing.generate_key(seed=bytes(range(32)))
    assert again.did == key.did and key.did.startswith("did:key:z6Mk")
    assert (
        signing.parse_did(key.did).public_bytes_raw()
        == key.private.public_key().public_bytes_raw()
    )
    assert signing.generate_key().did != signing.generate_key().did


@pytest.mark.parametrize(
    ("codec", "name"),
    [(0xE7, "secp256k1"), (0x1200, "p256"), (0xEC, "x25519"), (0x99, "unknown")],
)
def test_other_key_types_are_refused(codec: int, name: str) -> None:
    varint = bytearray()
    value = codec
    while True:
        byte, value = value & 0x7F, value >> 7
        varint.append(byte | (0x80 if value else 0))
        if not value:
            break
    did = "did:key:z" + signing.b58encode(bytes(varint) + bytes(33))
    with pytest.raises(SignatureError, match=name) as info:
        signing.parse_did(did)
    assert info.value.code == ErrorCode.SIGNATURE


@pytest.mark.parametrize(
    "did", ["did:web:example.com", "did:key:m123", "did:key:z0OIl", 7]
)
def test_malformed_dids_are_refused(did: Any) -> None:
    with pytest.raises(SignatureError):
        signing.parse_did(did)


def test_sign_and_verify(key: signing.SigningKey, signed_grain: oms.Grain) -> None:
    envelope = signing.sign(signed_grain.blob, key, iat=1_700_000_000)
    blob, did = signing.verify_signature(envelope)
    assert blob == signed_grain.blob and did == key.did
    assert (
        oms.content_address(blob) == signed_grain.address
    )  # signing keeps the address
    tag = cbor2.loads(envelope)
    assert tag.tag == 18
    protected = cbor2.loads(tag.value[0])
    assert protected == {1: -8, 3: "application/vnd.mg+msgpack", 4: key.did.encode()}
    assert tag.value[1] == {"iat": 1_700_000_000}


def _rewrap(envelope: bytes, **changes: Any) -> bytes:
    protected, unprotected, payload, signature = cbor2.loads(envelope).value
    parts = {
        "protected": protected,
        "payload": payload,
        "signature": signature,
        **changes,
    }
    body = [parts["protected"], unprotected, parts["payload"], parts["signature"]]
    return cbor2.dumps(cbor2.CBORTag(18, body))


def test_tampering_is_refused(key: signing.SigningKey, signed_grain: oms.Grain) -> None:
    envelope = signing.sign(signed_grain.blob, key)
    signature = cbor2.loads(envelope).value[3]
    other = oms.Belief(
        "alice", "works_at", "Evil", 0.9, created_at=1_700_000_000_000, signed=True
    )
    tampered = [
        _rewrap(envelope, payload=other.blob),
        _rewrap(envelope, signature=bytes([signature[0] ^ 1]) + signature[1:]),
        _rewrap(
            envelope,
            protected=cbor2.dumps(
                {1: -8, 3: "application/vnd.mg+msgpack", 4: SPEC_DID.encode()}
            ),
        ),
        _rewrap(envelope, protected=cbor2.dumps({1: -7, 4: key.did.encode()})),
    ]
    for bad in tampered:
        with pytest.raises(SignatureError):
            signing.verify_signature(bad)


def test_alg_minus_19_and_text_kid_are_accepted(
    key: signing.SigningKey, signed_grain: oms.Grain
) -> None:
    protected = cbor2.dumps({1: -19, 3: "application/vnd.mg+msgpack", 4: key.did})
    to_sign = cbor2.dumps(["Signature1", protected, b"", signed_grain.blob])
    envelope = cbor2.dumps(
        cbor2.CBORTag(18, [protected, {}, signed_grain.blob, key.sign_bytes(to_sign)])
    )
    assert signing.verify_signature(envelope) == (signed_grain.blob, key.did)


def test_signed_flag_invariant_both_ways(key: signing.SigningKey) -> None:
    unsigned = oms.Belief("a", "b", "c", 0.5, created_at=0)
    with pytest.raises(SignatureError) as info:
        signing.sign(unsigned.blob, key)
    assert info.value.code == ErrorCode.SIGNED_MISMATCH
    # A wrapped blob whose flag is 0 (signed by hand, around sign()):
    protected = cbor2.dumps({1: -8, 4: key.did.encode()})
    to_sign = cbor2.dumps(["Signature1", protected, b"", unsigned.blob])
    envelope = cbor2.dumps(
        cbor2.CBORTag(18, [protected, {}, unsigned.blob, key.sign_bytes(to_sign)])
    )
    with pytest.raises(SignatureError) as info:
        signing.verify_signature(envelope)
    assert info.value.code == ErrorCode.SIGNED_MISMATCH
    # A signed-flag blob arriving unwrapped at the store:
    store = oms.GrainStore()
    signed = oms.Belief("a", "b", "c", 0.5, created_at=0, signed=True)
    for item in (signed, signed.blob):
        with pytest.raises(SignatureError) as info:
            store.put(item)
        assert info.value.code == ErrorCode.SIGNED_MISMATCH
    assert len(store) == 0


def test_store_keeps_envelope_and_signer(
    key: signing.SigningKey, signed_grain: oms.Grain
) -> None:
    store = oms.GrainStore()
    address = store.put(signing.sign(signed_grain.blob, key))
    assert address == signed_grain.address
    assert store.status(address).signed_by == key.did
    assert store.get(address).signed


# --- selective disclosure: the digest's computed examples -----------------------


@pytest.mark.parametrize(
    ("value", "digest"),
    [
        (
            "alice-123",
            "48f1cf08a5b4ebe54182773c4345c19fb3a069740daeba7c4707b0e790745280",
        ),
        (0.95, "a4fcbfe47197bdc15995838fffb6e8edf23efcc824da5c23b8e988eec2fefc70"),
        (
            {"k": "v"},
            "0452c8dd07ca67da09e5336950ee5c2d377f3b74d15efde70dfaade5d2d729d8",
        ),
    ],
)
def test_elision_hash_examples(value: Any, digest: str) -> None:
    assert signing.elision_hash(value) == "sha256:" + digest


def test_disclosed_view() -> None:
    grain = oms.Belief(
        "alice", "works_at", "Acme", 0.9, created_at=0, user_id="alice-123"
    )
    view = signing.disclose(grain.fields, grain.address, ["user_id", "subject"])
    assert "user_id" not in view and "subject" not in view
    assert view["_disclosure_of"] == grain.address
    assert view["_elided"]["user_id"] == signing.elision_hash("alice-123")
    signing.verify_disclosed(view, "user_id", "alice-123")
    with pytest.raises(SignatureError) as info:
        signing.verify_disclosed(view, "user_id", "bob")
    assert info.value.code == ErrorCode.INTEGRITY
    # The view itself is a valid grain: the elided required subject stands as its hash.
    blob = oms.encode(view)
    assert oms.decode(blob)["_elided"] == view["_elided"]
    assert oms.content_address(blob) != grain.address


@pytest.mark.parametrize(
    "name", ["relation", "confidence", "created_at", "type", "source_type"]
)
def test_non_elidable_fields_are_refused(name: str) -> None:
    grain = oms.Belief("a", "b", "c", 0.5, created_at=0, source_type="user_explicit")
    with pytest.raises(oms.SchemaError):
        signing.disclose(grain.fields, grain.address, [name])


def test_eliding_a_missing_field_is_refused() -> None:
    grain = oms.Belief("a", "b", "c", 0.5, created_at=0)
    with pytest.raises(oms.SchemaError):
        signing.disclose(grain.fields, grain.address, ["user_id"])


def _envelope_variants(key: signing.SigningKey, grain: oms.Grain) -> dict[str, bytes]:
    """One malformed envelope for each way _open can refuse one."""
    good = signing.sign(grain.blob, key)
    protected, unprotected, payload, signature = cbor2.loads(good).value
    header = cbor2.loads(protected)

    def tagged(body: Any, tag: int = 18) -> bytes:
        return cbor2.dumps(cbor2.CBORTag(tag, body))

    return {
        "not CBOR": b"\xff\x00garbage",
        "another tag": tagged([protected, unprotected, payload, signature], tag=98),
        "three items": tagged([protected, payload, signature]),
        "a text payload": tagged([protected, unprotected, "text", signature]),
        "protected not CBOR": tagged([b"\xff\xff", unprotected, payload, signature]),
        "protected not a map": tagged(
            [cbor2.dumps([1, 2]), unprotected, payload, signature]
        ),
        "unknown algorithm": tagged(
            [cbor2.dumps({**header, 1: -7}), unprotected, payload, signature]
        ),
        "no kid": tagged([cbor2.dumps({1: -8}), unprotected, payload, signature]),
        "another content type": tagged(
            [cbor2.dumps({**header, 3: "text/plain"}), unprotected, payload, signature]
        ),
        "a kid that is no did:key": tagged(
            [cbor2.dumps({**header, 4: b"did:web:x"}), unprotected, payload, signature]
        ),
        "a wrong signature": tagged([protected, unprotected, payload, bytes(64)]),
        "an unsigned blob inside": signing._envelope(  # type: ignore[attr-defined]
            oms.Belief("a", "b", "c", 0.5, created_at=1).blob,
            key,
            signing.GRAIN_CONTENT_TYPE,
            None,
        ),
    }


@pytest.mark.parametrize(
    "case",
    ["not CBOR", "another tag", "three items", "a text payload", "protected not CBOR",
     "protected not a map", "unknown algorithm", "no kid", "another content type",
     "a kid that is no did:key", "a wrong signature", "an unsigned blob inside"],
)  # fmt: skip
def test_every_malformed_envelope_is_refused_by_verify_signature_and_by_put(
    key: signing.SigningKey, signed_grain: oms.Grain, case: str
) -> None:
    bad = _envelope_variants(key, signed_grain)[case]
    with pytest.raises(SignatureError) as info:
        signing.verify_signature(bad)
    expected = (
        ErrorCode.SIGNED_MISMATCH
        if case == "an unsigned blob inside"
        else ErrorCode.SIGNATURE
    )
    assert info.value.code == expected
    store = oms.GrainStore()
    before = {str(q) for q in store.backend.quads()}
    if signing.is_envelope(bad):
        with pytest.raises(SignatureError):
            store.put(bad)
    else:  # not recognisably an envelope: read as a blob, and refused as one
        with pytest.raises(oms.OmsError):
            store.put(bad)
    assert {str(q) for q in store.backend.quads()} == before


def test_a_signed_belief_is_knowledge_like_any_other(
    key: signing.SigningKey, signed_grain: oms.Grain
) -> None:
    store = oms.GrainStore()
    store.put(signing.sign(signed_grain.blob, key))
    asked = f"ASK {{ ?s ?p {signing_object(signed_grain)} }}"
    assert store.query(asked) is True  # its triple is in the default graph
    current = {
        str(q) for q in store.backend.quads(None, None, None, oms.rdf.vocab.OMS.current)
    }
    store.rebuild_current()
    assert {
        str(q) for q in store.backend.quads(None, None, None, oms.rdf.vocab.OMS.current)
    } == current


def signing_object(grain: oms.Grain) -> str:
    return '"' + grain["object"] + '"'


def test_an_envelope_with_bytes_after_it_or_a_header_not_a_map_is_refused(
    key: signing.SigningKey,
) -> None:
    """Bytes after the envelope, or an unprotected header of another kind, would
    travel beside the signature unchecked (COSE, RFC 9052: headers are maps)."""
    grain = oms.Grain.from_dict(
        {"type": "belief", "subject": "a", "relation": "r", "object": "x",
         "confidence": 0.5, "created_at": 1},
        signed=True,
    )  # fmt: skip
    envelope = signing.sign(grain.blob, key)
    assert signing.verify_signature(envelope)[0] == grain.blob
    with pytest.raises(oms.SignatureError, match="after its one CBOR item"):
        signing.verify_signature(envelope + b"\x00")
    tag = cbor2.loads(envelope)
    protected, _unprotected, payload, signature = tag.value
    listed = cbor2.dumps(cbor2.CBORTag(18, [protected, [1], payload, signature]))
    with pytest.raises(oms.SignatureError, match="maps"):
        signing.verify_signature(listed)


def test_the_design_names_reach_signing_from_the_package(
    key: signing.SigningKey, signed_grain: oms.Grain
) -> None:
    """Design §5: ``oms.signing.generate_key/sign/verify/parse_did``."""
    envelope = oms.signing.sign(signed_grain.blob, key)
    assert oms.signing.verify(envelope) == (signed_grain.blob, key.did)
    assert oms.signing.parse_did(key.did) is not None
    with pytest.raises(oms.SignatureError):
        oms.signing.verify(envelope[:-1] + bytes([envelope[-1] ^ 1]))
