"""Reading what a command is given: grain files, blobs, keys, SPARQL text (``-``: stdin).

Every failure is one of the library's errors naming the file: ERR_NOT_FOUND for a
file that is not there, ERR_STORE for one that cannot be read, and the codec's
codes for content that is not what was expected.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from ..codec.signing import SigningKey, is_envelope
from ..errors import (
    DecodeError,
    EncodeError,
    ErrorCode,
    NotFoundError,
    OmsError,
    SchemaError,
    SignatureError,
    StoreError,
)
from ..io import loads_json_grain, too_many_digits
from ..io.jsonl import unique_keys
from ..rdf.mapping import TIME_FIELDS
from ..times import iso_fields


def read_bytes(source: str) -> bytes:
    """The bytes of a file, or of stdin for ``-``."""
    refuse_empty_path(source)
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(source).read_bytes()
    except FileNotFoundError:
        raise NotFoundError(
            f"cannot read {source}: no such file", path=source
        ) from None
    except OSError as exc:
        raise StoreError(
            f"cannot read {source}: {exc.strerror or exc}", path=source
        ) from None


def refuse_empty_path(source: str) -> None:
    """Refuse an empty path: the system reads it as the current folder.

    Raises:
        SchemaError: ERR_EMPTY.
    """
    if not source:
        raise SchemaError(
            "expected a file's path (or - for stdin); found an empty one",
            code=ErrorCode.EMPTY,
            path="source",
        )


def read_json(source: str) -> Any:
    """A JSON file's value (ERR_CORRUPT when it is no JSON, or nests too deeply)."""
    data = read_bytes(source)
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EncodeError(
            f"{source} is not JSON: {exc}", code=ErrorCode.CORRUPT, path=source
        ) from exc
    except RecursionError:
        raise EncodeError(
            f"{source} nests JSON arrays or objects too deeply to be a grain (a grain "
            "nests at most 32 levels)",
            code=ErrorCode.CORRUPT,
            path=source,
        ) from None
    except ValueError:  # int("9" * 5000): Python's int-string limit
        raise too_many_digits(source) from None


def read_blob(source: str) -> bytes:
    """Read a blob file, or a file of hex text (whitespace ignored)."""
    data = read_bytes(source)
    if data[:1] == b"\x01":
        return data
    try:
        return bytes.fromhex(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise DecodeError(
            f"{source} is neither a blob (first byte 0x01) nor hex text; "
            f"first byte is 0x{data[:1].hex() or '(empty)'}",
            code=ErrorCode.VERSION if data else ErrorCode.TOO_SHORT,
            path=source,
        ) from None


def read_key(path: str) -> SigningKey:
    """The Ed25519 private key of a file ``oms-rdf keygen`` wrote (hex)."""
    text = read_bytes(path).decode("ascii", "replace").strip()
    try:
        return SigningKey.from_private_bytes(bytes.fromhex(text))
    except ValueError:
        raise SignatureError(
            f"{path} does not hold a hex Ed25519 private key (as keygen writes)",
            path=path,
        ) from None


def sparql_text(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A SPARQL argument: the text itself, or ``@FILE`` for a file's (UTF-8) text."""
    if not value.startswith("@"):
        return value
    path = value[1:]
    try:
        return read_bytes(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(
            f"a query file is UTF-8 text; byte {exc.start} of {path} is not",
            path=path,
        ) from None


def one_grain(ctx: click.Context, param: click.Parameter, source: str) -> Any:
    """A SOURCE argument that holds exactly one grain: its blob or JSON fields."""
    items = grains_from(source)
    if len(items) != 1:  # what the file holds, not how it was asked: not usage
        raise SchemaError(
            f"{source}: expected one grain; found {len(items)}", path=source
        )
    return items[0]


def grains_from(source: str) -> list[Any]:
    """Read grains from a blob or COSE envelope file, a JSON object or array, or JSON Lines."""
    return [item for _, item in placed_grains(source)]


def placed_grains(source: str) -> list[tuple[str, Any]]:
    """The grains of ``source``, each with its place (``file:line`` in JSON Lines,
    ``file[index]`` in an array), so that a refusal can name the line, counted from 1."""
    data = read_bytes(source)
    if data[:1] == b"\x01" or is_envelope(data):
        return [(source, data)]
    try:
        text = data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise DecodeError(
            f"{source} is neither a blob (first byte 0x01), a COSE envelope, JSON nor "
            f"JSON Lines: byte {exc.start} is not UTF-8",
            path=source,
        ) from None
    try:
        if text.lstrip().startswith("["):
            return list(array_grains(text, source))
        value = json.loads(text, object_pairs_hook=unique_keys)
    except RecursionError:
        raise DecodeError(
            f"{source} nests JSON arrays or objects too deeply to be a grain",
            path=source,
        ) from None
    except json.JSONDecodeError:
        lines = [
            (n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()
        ]
        return [
            (f"{source}:{n}", json_grain(line, f"{source}:{n}")) for n, line in lines
        ]
    except OmsError:
        raise  # an item of the array refused, named
    except ValueError:  # after JSONDecodeError, one of them: Python's digit limit
        raise too_many_digits(source) from None
    return [(source, json_grain(json.dumps(value), source))]


def array_grains(text: str, source: str) -> Iterator[tuple[str, Any]]:
    """The grains of a JSON array, one item at a time: each item's text goes through
    the one JSON reader, and no parsed copy of the whole array is ever held."""
    decoder = json.JSONDecoder()
    at = text.index("[") + 1
    index = 0
    while True:
        at = skip_space(text, at)
        if text.startswith("]", at):
            if text[at + 1 :].strip():
                raise DecodeError(f"text after the JSON array in {source}", path=source)
            return
        where = f"{source}[{index}]"
        if index:
            if not text.startswith(",", at):
                raise DecodeError(
                    f"expected , or ] at character {at} of {source}", path=where
                )
            at = skip_space(text, at + 1)
        try:
            _, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise DecodeError(f"not JSON: {exc.msg}", path=where) from None
        except ValueError:
            raise too_many_digits(where) from None
        yield where, json_grain(text[at:end], where)
        at, index = end, index + 1


def skip_space(text: str, at: int) -> int:
    """The first place from ``at`` on that is no JSON whitespace."""
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def json_grain(text: str, where: str) -> Any:
    """One grain as export writes it (the library's one JSON reader)."""
    try:
        item, index = loads_json_grain(text)
    except OmsError as exc:
        raise DecodeError(exc.message, code=exc.code, path=where) from None
    if index is not None:
        raise DecodeError(
            "this line carries index state (an export): `oms-rdf import` keeps it, "
            "`put` would store the grain as current",
            path=where,
        )
    return iso_times(item, where)


def iso_times(item: Any, where: str) -> Any:
    """A JSON grain's fields with ISO 8601 text in its time fields read as epoch ms
    (JSON has no datetime); a blob is left as it is."""
    if not isinstance(item, dict):
        return item
    try:
        return iso_fields(item, TIME_FIELDS)
    except SchemaError as exc:
        raise SchemaError(
            exc.message, code=exc.code, path=f"{where}: $.{exc.path}"
        ) from None
