"""Seed inputs for the fuzzers: real grains and real exports, then mutated."""

from __future__ import annotations

import io
import json
import random
from functools import cache
from pathlib import Path

import oms_rdf as oms
from oms_rdf.codec.signing import generate_key, sign
from oms_rdf.io.container import write_frames

VECTORS = Path(__file__).parent.parent / "golden" / "vectors.json"


@cache
def blobs() -> tuple[bytes, ...]:
    vectors = json.loads(VECTORS.read_text())["vectors"]
    found = [bytes.fromhex(v["blob_hex"]) for v in vectors if "blob_hex" in v]
    found += [oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1).blob]
    return tuple(found)


@cache
def exports() -> dict[str, bytes]:
    """A small store with history, evidence and a signed grain, in every format."""
    store = oms.GrainStore(clock=lambda: 1_800_000_000_000)
    old = store.put(oms.Belief("alice", "works_at", "Acme", 0.9, created_at=1))
    store.supersede(old, oms.Belief("alice", "works_at", "Initech", 0.9, created_at=2))
    store.evidence(store.beliefs("alice")[0], "supporting", 0.9)
    signed = oms.Grain.from_dict({"type": "belief", "subject": "bob", "relation": "r",
                                  "object": "o", "confidence": 1, "created_at": 3}, signed=True)  # fmt: skip
    store.put(sign(signed.blob, generate_key(bytes(32))))
    out = {}
    for fmt in ("jsonl", "nquads", "trig", "turtle", "mg"):
        buffer = io.BytesIO()
        store.export(buffer, format=fmt, grains=True)
        out[fmt] = buffer.getvalue()
    frames = io.BytesIO()
    write_frames(blobs(), frames)
    out["frames"] = frames.getvalue()
    out["envelope"] = sign(signed.blob, generate_key(bytes(32)))
    return out


# The stateful targets draw everything from their input bytes: any bytes do.
STATEFUL_SEEDS = tuple(bytes([i]) * 16 for i in range(8))


def seeds_for(target: str) -> tuple[bytes, ...]:
    if target.startswith(("belief", "restore_", "adopt_", "http")):
        return STATEFUL_SEEDS
    kind = target.removeprefix("import_")
    if kind in ("decode",):
        return blobs()
    if kind == "container":
        return (exports()["mg"],)
    if kind == "json_line":
        return tuple(exports()["jsonl"].splitlines())
    return (exports()[kind],)


def mutate(data: bytes, rng: random.Random) -> bytes:
    """A few random edits: flips, inserts, deletions, splices of interesting bytes."""
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3, 8))):
        op = rng.randrange(5)
        at = rng.randrange(len(buf) + 1)
        if op == 0 and buf:
            buf[min(at, len(buf) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            buf[at:at] = bytes(
                [
                    rng.choice(
                        (0, 0x7F, 0x80, 0xC0, 0xCC, 0xDC, 0xFF, rng.randrange(256))
                    )
                ]
            )
        elif op == 2 and buf:
            del buf[at : at + rng.randrange(1, 9)]
        elif op == 3 and buf:
            buf[min(at, len(buf) - 1)] = rng.randrange(256)
        else:
            buf[at:at] = rng.choice(
                (b"\\u0000", b'"', b"{", b"[" * 40, b"\xff\xfe", b"<<", b"\n")
            )
    return bytes(buf)
