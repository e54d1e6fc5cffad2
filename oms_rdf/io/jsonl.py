"""JSON Lines: one grain a line, with full names (the one reader and writer of the format)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from ..codec import MAX_DEPTH, check_address
from ..codec.grain import Grain
from ..codec.schema import INDEX_FIELDS
from ..errors import DecodeError, ErrorCode
from ..rdf.literals import base64_bytes
from ..rdf.mapping import expected_header
from ..times import to_millis


def _json_bytes(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$base64": base64.b64encode(value).decode()}
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict, refusing a key given twice: which value
    counts is nowhere written down (Python's reader kept the last), as a
    MessagePack map with a repeated key is refused.

    Raises:
        DecodeError: ERR_CORRUPT naming the key.
    """
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise DecodeError(f"the key {key!r} is given twice in one JSON object")
            seen.add(key)
    return value


def _json_object(pairs: list[tuple[str, Any]]) -> Any:
    if len(pairs) == 1 and pairs[0][0] == "$base64" and isinstance(pairs[0][1], str):
        try:
            return base64_bytes(pairs[0][1])
        except (binascii.Error, ValueError) as exc:
            raise DecodeError(f"$base64 must be base64 text: {exc}") from None
    return unique_keys(pairs)


INDEX_KEY = "$index"  # a JSON line's index state, in the .mg manifest's shape
ERASED_KEY = "$erased"  # a tombstone line: {"$erased": "<address>", "at": <epoch ms>}


def loads_json_grain(text: str) -> tuple[Any, dict[str, Any] | None]:
    """Read one grain written by :func:`dumps_jsonl`: its fields or blob, and index state.

    ``{"$base64": ...}`` values become bytes and ``{"$blob": ...}`` the blob itself;
    this is the one reader of the format (the CLI's ``put`` uses it too).

    Raises:
        DecodeError: ERR_CORRUPT for text that is not JSON, nested deeper than
            Python's JSON reader goes, an object with a key given twice, or a
            malformed ``$blob``, ``$base64`` or ``$index``; ERR_RANGE for an
            integer past Python's 4300-digit limit.
    """
    try:
        value = json.loads(text, object_pairs_hook=_json_object)
    except json.JSONDecodeError as exc:
        raise DecodeError(f"not JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        # Spec §19: nesting too deep is ERR_CORRUPT; a grain nests 32 levels at most.
        raise DecodeError(
            "JSON nested too deeply to read; a grain's values nest at most "
            f"{MAX_DEPTH} levels"
        ) from None
    except DecodeError:
        raise
    except ValueError as exc:  # int("9" * 5000): Python's int-string limit
        if "integer string conversion" not in str(exc):
            raise DecodeError(f"not JSON: {exc}") from None
        raise too_many_digits() from None
    if not isinstance(value, dict):
        return value, None
    if ERASED_KEY in value:
        raise DecodeError(
            "a tombstone (an erased grain's address and time), not a grain; only "
            "an import takes it"
        )
    index = value.pop(INDEX_KEY, None)
    if index is not None and not isinstance(index, dict):
        raise DecodeError(f"{INDEX_KEY} must be a JSON object, not {index!r}")
    for key in ("$blob", "$envelope"):  # a blob, or a signed grain's COSE_Sign1
        if set(value) == {key}:
            data = value[key]
            try:
                return base64.b64decode(data, validate=True), index
            except (TypeError, ValueError):
                raise DecodeError(f"{key} must be base64 text, not {data!r}") from None
    return value, index


def dumps_jsonl(
    grain: Grain, index: Mapping[str, Any] | None = None, envelope: bytes | None = None
) -> str:
    """Return a grain as one JSON line with full names; bytes as ``{"$base64": ...}``.

    A grain whose header the fields do not determine (an application type byte, a
    foreign writer's header hints), or that carries index-layer fields a foreign
    writer put in its blob, is written as ``{"$blob": "<base64>"}`` so that
    its bytes, and so its address, survive. A signed grain is written as its
    COSE_Sign1 envelope, ``{"$envelope": "<base64>"}``, so that it comes back
    signed and verified. ``index`` (the grain's index state as a ``.mg`` manifest
    entry) goes under ``"$index"``, so an import brings nothing back as current
    that was not.
    """
    line: dict[str, Any]
    if envelope is not None:
        line = {"$envelope": base64.b64encode(envelope).decode()}
    elif (
        expected_header(grain) != grain.blob[:9]
        or INDEX_FIELDS.keys() & grain.fields.keys()
    ):
        line = {"$blob": base64.b64encode(grain.blob).decode()}
    else:
        line = dict(grain.fields)
    if index:
        line[INDEX_KEY] = dict(index)
    return json.dumps(
        line, ensure_ascii=False, separators=(",", ":"), default=_json_bytes
    )


def dumps_tombstone(address: str, erased_at: int) -> str:
    """Return the JSON line of a tombstone: an erased grain's address and time.

    >>> dumps_tombstone("ab" * 32, 1800000000000)[-25:]
    'abab","at":1800000000000}'
    """
    return json.dumps({ERASED_KEY: address, "at": erased_at}, separators=(",", ":"))


TOMBSTONE_MARK = b'"$erased"'  # in every tombstone line; a grain line may hold it too


def too_many_digits(path: str | None = None) -> DecodeError:
    """The refusal of a JSON integer past Python's 4300-digit limit (ERR_RANGE),
    for every reader of grains as JSON."""
    return DecodeError(
        "an integer with more digits than Python reads (4300); a grain's integers "
        "fit in 64 bits",
        code=ErrorCode.RANGE,
        path=path,
    )


def loads_tombstone(text: str) -> tuple[str, int] | None:
    """Read a tombstone line written by :func:`dumps_tombstone`, or None for any
    other line.

    Raises:
        DecodeError: ERR_CORRUPT for a tombstone without a valid address and time.
    """
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None  # not JSON: the grain reader names the fault
    if not isinstance(value, dict) or ERASED_KEY not in value:
        return None
    address, at = value.get(ERASED_KEY), value.get("at")
    if set(value) != {ERASED_KEY, "at"} or type(at) is not int or at < 0:
        raise DecodeError(
            f"a tombstone line is {{{ERASED_KEY!r}: <address>, 'at': <epoch ms>}}, "
            f"found {text.strip()[:120]!r}"
        )
    return check_address(address, path=ERASED_KEY), to_millis(at, "at")
