"""Fuzz targets: every way bytes come in, and the laws that must hold on them.

Each target takes arbitrary bytes and either succeeds or raises an ``OmsError``;
any other exception is a bug. The stateful targets (:mod:`.beliefs`,
:mod:`.imports`, :mod:`.http`) also check the store's trust laws (:mod:`.laws`).
Where decoding succeeds, the round-trip law is
checked: the payload re-encodes to the same bytes, and so does the whole blob
whenever its header is one the fields determine. The same targets run in CI
under hypothesis (``test_fuzz.py``) and for long runs from ``run.py``.
"""

from __future__ import annotations

import io
from collections.abc import Callable

import oms_rdf as oms
from oms_rdf.codec import encode_fields
from oms_rdf.codec.grain import Grain
from oms_rdf.codec.signing import verify_signature
from oms_rdf.io import loads_json_grain
from oms_rdf.io.container import read_frames, read_mg
from oms_rdf.rdf.mapping import expected_header

Target = Callable[[bytes], None]


def round_trip(blob: bytes) -> None:
    """Decode a blob; if it decodes, it must re-encode to itself."""
    try:
        grain = Grain.from_blob(blob)
    except oms.OmsError:
        return
    again, _ = encode_fields(grain.fields, type_byte=grain.type_byte,
                             signed=grain.signed, foreign=True)  # fmt: skip
    assert again[9:] == blob[9:], f"payload changed on re-encoding: {blob.hex()}"
    if expected_header(grain) == blob[:9]:
        assert again == blob, f"blob changed on re-encoding: {blob.hex()}"


def container(data: bytes) -> None:
    try:
        for blob in read_mg(io.BytesIO(data)).blobs():
            round_trip(blob)
    except oms.OmsError:
        pass


def frames(data: bytes) -> None:
    try:
        for blob in read_frames(io.BytesIO(data)):
            round_trip(blob)
    except oms.OmsError:
        pass


def envelope(data: bytes) -> None:
    try:
        round_trip(verify_signature(data)[0])
    except oms.OmsError:
        pass


_ACCEPTING = oms.GrainStore()  # accept() checks what a caller gives; it writes nothing


def json_line(data: bytes) -> None:
    try:
        fields, _index = loads_json_grain(data.decode("utf-8", "replace"))
        round_trip(_ACCEPTING.accept(fields)[0].blob)
    except oms.OmsError:
        pass


def importer(fmt: str) -> Target:
    """Import ``data`` as ``fmt`` into a fresh store: all of it, or an OmsError and nothing."""

    def run(data: bytes) -> None:
        store = oms.GrainStore(clock=lambda: 1_800_000_000_000)
        before = {str(q) for q in store.backend.quads()}
        try:
            store.import_(io.BytesIO(data), format=fmt)
        except oms.OmsError:
            assert {str(q) for q in store.backend.quads()} == before, (
                "a refused import wrote"
            )

    run.__name__ = f"import_{fmt}"
    return run


def decode(data: bytes) -> None:
    round_trip(data)


def _stateful() -> dict[str, Target]:
    """The targets that put caller text into a real store and check its laws."""
    from . import beliefs, http, imports

    return {**beliefs.TARGETS, **imports.TARGETS, **http.TARGETS}


TARGETS: dict[str, Target] = {
    "decode": decode,
    "container": container,
    "frames": frames,
    "envelope": envelope,
    "json_line": json_line,
    **{
        f"import_{fmt}": importer(fmt)
        for fmt in ("jsonl", "nquads", "trig", "turtle", "mg")
    },
    **_stateful(),
}
