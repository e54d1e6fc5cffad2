"""The ``oms-rdf`` command line: thin commands over the library."""

from __future__ import annotations

import base64
import errno
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict, TypeVar
from urllib.parse import SplitResult, urlsplit

import click
import pyoxigraph as ox

from ..codec import content_address, decode, encode, verify
from ..codec.grain import Grain
from ..codec.signing import SigningKey, disclose, generate_key, is_envelope, sign
from ..codec.signing import verify as verify_signed
from ..errors import (
    DecodeError,
    EncodeError,
    ErrorCode,
    NotFoundError,
    OmsError,
    QueryError,
    SchemaError,
    SignatureError,
    StoreError,
)
from ..io import FORMATS, PLAIN_FORMATS, dumps_turtle, format_for, loads_json_grain
from .progress import Bars
from ..rdf.mapping import TIME_FIELDS, millis_literal
from ..store import GrainStore, Solutions
from ..times import iso_fields, to_millis
from .privacy import FiniteFloat
from .privacy import register as register_privacy

F = TypeVar("F", bound=Callable[..., Any])
MAX_LIMIT = 1_000_000  # the most beliefs one search prints


class _Group(click.Group):
    """Turns every OmsError, and every file the system cannot open or write, into one
    line ``error: …`` and exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (OmsError, OSError) as exc:
            _undo_new_store(ctx)  # the command closed its store on the way out
            if ctx.params.get("traceback"):
                raise
            click.echo(f"error: {_said(exc)}", err=True)
            ctx.exit(1)


_NEW_STORE = "oms_rdf.new_store"  # ctx.meta: the store this command made, if any
_KEPT_STORE = "oms_rdf.kept_store"  # ctx.meta: the same, kept whatever happens


def _undo_new_store(ctx: click.Context) -> None:
    """Remove the store a refused write made: where nothing was, nothing stays, and
    a folder that was empty is left empty (a refused write changes nothing)."""
    import shutil

    made: tuple[Path, bool] | None = ctx.meta.pop(_NEW_STORE, None)
    if made is None:
        return
    folder, was_empty_folder = made
    if not was_empty_folder:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _said(exc: Exception) -> str:
    if isinstance(exc, OSError):  # a missing file, a directory, …
        name = (
            exc.filename2 if exc.filename2 is not None else exc.filename
        )  # rename: the target
        if isinstance(name, str) and name.endswith(".partial"):
            name = name[: -len(".partial")]  # the file the user named
        where = f": {name}" if name is not None else ""
        missing = isinstance(exc, FileNotFoundError)
        code = ErrorCode.NOT_FOUND if missing else ErrorCode.STORE
        return f"{code}: {exc.strerror or exc}{where}"
    return str(exc)


@click.group(cls=_Group)
@click.option("--traceback", is_flag=True, help="Show the full stack on errors.")
@click.option(
    "--store",
    "store_path",
    envvar="OMS_RDF_STORE",
    help="Directory of the on-disk store, or the URL of an Oxigraph server "
    "(http(s)://host:port: /query, /update, /store) (or $OMS_RDF_STORE).",
)
@click.option(
    "--query-url", help="A SPARQL 1.1 server's query endpoint (instead of --store)."
)
@click.option("--update-url", help="Its update endpoint (default: the query endpoint).")
@click.option("--store-url", help="Its Graph Store Protocol endpoint, for bulk loads.")
@click.option(
    "--virtuoso",
    envvar="OMS_RDF_VIRTUOSO",
    help="The base URL of a Virtuoso server, http(s)://[user:password@]host:port "
    "(or $OMS_RDF_VIRTUOSO); a user needs the SPARQL_UPDATE role to write.",
)
@click.version_option(package_name="oms-rdf")
@click.pass_context
def cli(ctx: click.Context, traceback: bool, store_path: str | None, query_url: str | None,
        update_url: str | None, store_url: str | None, virtuoso: str | None) -> None:  # fmt: skip
    """Open Memory Specification grains as a bi-temporal RDF knowledge graph."""
    ctx.obj = store_path
    if query_url is not None:
        ctx.obj = (query_url, update_url, store_url)
    if virtuoso is not None:
        ctx.obj = ("virtuoso", virtuoso)


def _server_url(option: str, url: str) -> SplitResult:
    """Check a server's URL before any client is made of it: an http(s) scheme, a
    host, and a port (if any) that is a number from 1 to 65535.

    Raises:
        SchemaError: ERR_SCHEMA naming the option, what was expected and the URL.
    """
    expected = f"{option}: expected http(s)://host[:port] with a port from 1 to 65535"
    try:
        parts = urlsplit(url)
        port = parts.port  # ValueError for a port that is no number, or out of range
    except ValueError as exc:
        raise SchemaError(f"{expected}; found {url!r} ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise SchemaError(f"{expected}; found {url!r}")
    return parts


def _virtuoso(url: str) -> Any:
    """A Virtuoso backend for ``http(s)://[user:password@]host:port``."""
    from urllib.parse import unquote

    from ..backends.virtuoso import VirtuosoBackend  # needs the [remote] extra

    parts = _server_url("--virtuoso", url)
    host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname
    base = f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    return VirtuosoBackend(base, user=user, password=password)


def _store(ctx: click.Context, *, read: bool = False, create: bool = False,
           path: str | None = None, keep_new: bool = False) -> GrainStore:  # fmt: skip
    """The store of --store (or ``path``); a read command opens it read-only when
    another holds it. Only a command that writes grains in (``create``) may make a
    new on-disk store: every other one refuses a path that holds none. A new store
    is taken away when the command is refused, unless ``keep_new`` (a session's
    store, such as an agent's memory): then ``ctx.meta`` notes where it was made,
    for the command to say so."""
    if path is None:
        path = ctx.find_root().obj
    if path == "":
        raise SchemaError(
            "--store: expected the folder of a store or a server's http(s) URL; "
            "found ''"
        )
    if path is None:
        raise click.UsageError(
            "this command needs --store PATH or URL, or --query-url (or $OMS_RDF_STORE)"
        )
    if isinstance(path, tuple) and path[0] == "virtuoso":
        return _closing(ctx, GrainStore(backend=_virtuoso(path[1])))
    if isinstance(path, tuple) or "://" in path:
        from ..backends.protocol import SparqlBackend  # needs the [remote] extra

        if isinstance(path, tuple):
            for option, url in zip(_ENDPOINTS, path, strict=True):
                if url is not None:
                    _server_url(option, url)
            backend = SparqlBackend(*path)
        else:
            _server_url("--store", path)
            backend = SparqlBackend.oxigraph(path)
        return _closing(ctx, GrainStore(backend=backend))
    if _check_store_path(path, create=create):
        folder = Path(path)
        ctx.meta[_KEPT_STORE if keep_new else _NEW_STORE] = (folder, folder.is_dir())
    try:
        return _closing(ctx, GrainStore(path))
    except StoreError as exc:
        if "lock" not in str(exc).lower():
            raise
        if not read:
            raise StoreError(
                f"{exc.message}; another process has it open for writing; use "
                "`oms-rdf serve` to share one store between processes",
                code=exc.code,
                path=exc.path,
            ) from exc
    click.echo(
        "note: another process holds this store; reading a read-only view as of now "
        "(run `oms-rdf serve` there to read and write together)",
        err=True,
    )
    return _closing(ctx, GrainStore(path, read_only=True))


_ENDPOINTS = ("--query-url", "--update-url", "--store-url")


def _check_store_path(path: str, *, create: bool) -> bool:
    """Refuse a --store path that holds no store, unless ``create`` and it is free;
    return whether opening it will make a new store.

    A store is a RocksDB folder, which always holds a ``CURRENT`` file; a path
    whose vacuum a crash interrupted (``PATH.vacuum-ready`` beside it) is one too,
    since opening it finishes the swap. A command that writes may create a store
    where nothing is, or in an empty folder, never among other files.

    Raises:
        NotFoundError: ERR_NOT_FOUND naming the path and what is there.
    """
    folder = Path(path)
    if (folder / "CURRENT").is_file():
        return False
    if folder.with_name(folder.name + ".vacuum-ready").exists():
        return False
    if not folder.exists():
        if create:
            return True
        raise NotFoundError(
            f"no store at {path}: the path does not exist (check --store; `put`, "
            "`import` or `update` creates a store)"
        )
    if create and folder.is_dir() and not any(folder.iterdir()):
        return True
    what = "a folder of other files" if folder.is_dir() else "a file"
    if folder.is_dir() and not any(folder.iterdir()):
        what = "an empty folder"
    raise NotFoundError(
        f"no store at {path}: it is {what}, not a store (a store's folder holds "
        "RocksDB files, CURRENT among them)"
    )


def _closing(ctx: click.Context, store: GrainStore) -> GrainStore:
    """Close the store (flush it, release its lock or connections) after the command."""
    ctx.call_on_close(store.close)
    return store


def _time(value: str | None, option: str) -> int | None:
    """Parse a time option by the one rule of :mod:`oms_rdf.times` (ISO 8601, UTC
    when no zone is given; epoch ms as ms:N or 11+ digits)."""
    return None if value is None else to_millis(value, option)


class _Point(TypedDict):
    valid_at: int | None
    as_of: int | None


def _point(valid_at: str | None, as_of: str | None) -> _Point:
    """The bi-temporal point of --valid-at and --as-of, as keyword arguments."""
    return {"valid_at": _time(valid_at, "--valid-at"), "as_of": _time(as_of, "--as-of")}


def _grains_from(source: str) -> list[Any]:
    """Read grains from a blob or COSE envelope file, a JSON object or array, or JSON Lines."""
    data = _read(source)
    if data[:1] == b"\x01" or is_envelope(data):
        return [data]
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
            return list(_array_grains(text, source))
        value = json.loads(text)
    except RecursionError:
        raise DecodeError(
            f"{source} nests JSON arrays or objects too deeply to be a grain",
            path=source,
        ) from None
    except json.JSONDecodeError:
        lines = [
            (n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()
        ]
        return [_json_grain(line, f"{source}:{n}") for n, line in lines]
    return [_json_grain(json.dumps(value), source)]


def _array_grains(text: str, source: str) -> Iterator[Any]:
    """The grains of a JSON array, one item at a time: each item's text goes through
    the one JSON reader, and no parsed copy of the whole array is ever held."""
    decoder = json.JSONDecoder()
    at = text.index("[") + 1
    index = 0
    while True:
        at = _skip_space(text, at)
        if text.startswith("]", at):
            if text[at + 1 :].strip():
                raise DecodeError(f"text after the JSON array in {source}", path=source)
            return
        if index:
            if not text.startswith(",", at):
                raise DecodeError(f"expected , or ] at character {at} of {source}",
                                  path=f"{source}[{index}]")  # fmt: skip
            at = _skip_space(text, at + 1)
        try:
            _, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise DecodeError(
                f"not JSON: {exc.msg}", path=f"{source}[{index}]"
            ) from None
        yield _json_grain(text[at:end], f"{source}[{index}]")
        at, index = end, index + 1


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _text_of(path: str) -> str:
    """A query file's text, which must be UTF-8 (as SPARQL text is)."""
    try:
        return _read(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(
            f"a query file is UTF-8 text; byte {exc.start} of {path} is not",
            path=path,
        ) from None


def _json_grain(text: str, where: str) -> Any:
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
    return _iso_times(item, where)


def _iso_times(item: Any, where: str) -> Any:
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


def _row(grain: Grain) -> dict[str, Any]:
    f = grain.fields
    return {
        "address": grain.address,
        "subject": f.get("subject"),
        "relation": f.get("relation"),
        "object": f.get("object"),
        "confidence": f.get("confidence"),
        "valid_from": _iso(
            f.get("valid_from", f.get("system_valid_from", grain.created_at))
        ),
        "valid_to": _iso(f.get("valid_to")),
        "namespace": grain.namespace,
    }


def _iso(ms: int | None) -> str | None:
    return None if ms is None else millis_literal(ms).value


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    cells = [
        [("" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows
    ]
    widths = [
        max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)
    ]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += [
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells
    ]
    return "\n".join(line.rstrip() for line in lines)


TABLE_LIMIT = 50  # the beliefs a table shows unless --limit says otherwise
ELLIPSIS = "…"


def _fitted_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """:func:`_table` whose lines fit the terminal's width: the widest columns
    are narrowed first, and a cut cell ends in an ellipsis."""
    import shutil

    width = shutil.get_terminal_size().columns
    cells = [
        [("" if r.get(c) is None else " ".join(str(r.get(c)).split())) for c in columns]
        for r in rows
    ]
    widths = [
        max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)
    ]
    room = max(width - 2 * (len(columns) - 1), len(columns) * 4)
    while sum(widths) > room:
        widest = max(range(len(widths)), key=lambda i: widths[i])
        if widths[widest] <= 4:
            break
        widths[widest] -= 1

    def cut(text: str, w: int) -> str:
        return text if len(text) <= w else text[: w - 1] + ELLIPSIS

    lines = [
        "  ".join(cut(v, w).ljust(w) for v, w in zip(row, widths, strict=True))
        for row in [columns, *cells]
    ]
    return "\n".join(line.rstrip() for line in lines)


BELIEF_COLUMNS = [
    "address",
    "subject",
    "relation",
    "object",
    "confidence",
    "valid_from",
    "valid_to",
]


def _read(source: str) -> bytes:
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


def _read_json(source: str) -> Any:
    data = _read(source)
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


def _read_blob(source: str) -> bytes:
    """Read a blob file, or a file of hex text (whitespace ignored)."""
    data = _read(source)
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


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$base64": base64.b64encode(value).decode()}
    if isinstance(value, frozenset | set):
        return sorted(value)
    raise TypeError(f"cannot show {type(value).__name__} as JSON")


def dump_json(value: Any) -> str:
    """Return ``value`` as indented JSON; bytes become ``{"$base64": ...}``."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=_json_default)


@cli.command("encode")
@click.argument("source")
@click.option("--hex", "as_hex", is_flag=True, help="Print the blob as hex instead.")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False), help="Write the blob here."
)
def encode_cmd(source: str, as_hex: bool, output: str | None) -> None:
    """Encode a JSON grain (full field names) and print its content address.

    Example:

        oms-rdf encode grain.json -o grain.mg
    """
    blob = encode(_iso_times(_read_json(source), source))
    if output:
        Path(output).write_bytes(blob)
    click.echo(blob.hex() if as_hex else content_address(blob))


@cli.command("decode")
@click.argument("source")
def decode_cmd(source: str) -> None:
    """Decode a blob (binary or hex text) and print it as JSON with full names.

    Example:

        oms-rdf decode grain.mg
    """
    click.echo(dump_json(decode(_read_blob(source))))


@cli.command("verify")
@click.argument("source")
@click.argument("address")
def verify_cmd(source: str, address: str) -> None:
    """Check that a blob hashes to ADDRESS; exit 1 if it does not.

    Example:

        oms-rdf verify grain.mg 3288d0d41cf49a1d428e404f0b6a6fe60388be9536937557f6139b813d53a520
    """
    verify(_read_blob(source), address)
    click.echo(f"ok {address}")


@cli.command("put")
@click.argument("sources", nargs=-1, required=True)
@click.pass_context
def put_cmd(ctx: click.Context, sources: tuple[str, ...]) -> None:
    """Store grains from files (blob, JSON, JSON array or JSON Lines; - for stdin).

    All grains of one call are stored in one atomic write. Example:

        oms-rdf --store mem.db put beliefs.jsonl
    """
    items = [item for source in sources for item in _grains_from(source)]
    if not items:
        raise DecodeError(f"no grain in {', '.join(sources)}: nothing was stored")
    store = _store(ctx, create=True)
    for address in store.put_many(items):
        grain = store.get(address)
        said = " ".join(
            str(grain.get(k)) if k != "object" else repr(grain.get(k))
            for k in ("subject", "relation", "object")
            if k in grain.fields
        )
        click.echo(f"{address}  {grain.type} {said}".rstrip())


@cli.command("get")
@click.argument("address")
@click.pass_context
def get_cmd(ctx: click.Context, address: str) -> None:
    """Print a stored grain as JSON, with its index state (times in ISO 8601 UTC).

    Example:

        oms-rdf --store mem.db get 3288d0d4...
    """
    store = _store(ctx, read=True)
    grain = store.get(address)
    state = store.status(address)
    fields = {k: _iso(v) if k in TIME_FIELDS and type(v) is int else v
              for k, v in grain.fields.items()}  # fmt: skip
    index = {k: getattr(state, k) for k in state.__slots__ if k != "address"}
    for k in ("system_to", "voided_at", "pending_erasure"):
        index[k] = _iso(index[k])
    click.echo(dump_json({"address": grain.address, "fields": fields, "index": index}))


TIME_HELP = (
    "ISO 8601 (2024, 2024-06, 2024-06-01, 2024-06-01T12:00:00Z; no zone: UTC) or "
    "epoch ms (ms:1717243200000, or 11+ digits)"
)


def time_options(fn: F) -> F:
    """The bi-temporal options shared by the query commands."""
    fn = click.option(
        "--as-of",
        help=f"System time: what the store knew then; {TIME_HELP} (default now).",
    )(fn)
    fn = click.option(
        "--valid-at", help=f"Valid time: when it was true; {TIME_HELP} (default now)."
    )(fn)
    return fn


@cli.command("beliefs")
@click.option("--subject")
@click.option("--relation")
@click.option("--namespace")
@time_options
@click.option("--limit", type=click.IntRange(1, MAX_LIMIT),
              help=f"At most this many beliefs (the table: default {TABLE_LIMIT}; "
              "JSON: default all).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON array of the full rows instead of a table.")  # fmt: skip
@click.option("--jsonl", "as_jsonl", is_flag=True,
              help="Print JSON Lines, one full row a line, instead of a table.")  # fmt: skip
@click.pass_context
def beliefs_cmd(ctx: click.Context, subject: str | None, relation: str | None,
                namespace: str | None, valid_at: str | None, as_of: str | None,
                limit: int | None, as_json: bool, as_jsonl: bool) -> None:  # fmt: skip
    """List the beliefs true at --valid-at as known at --as-of.

    The table shows the first --limit beliefs (50 by default; a note on stderr
    says how many more there are), each column cut to fit the terminal's width
    with an ellipsis; --json and --jsonl print the full rows.

    Example:

        oms-rdf --store mem.db beliefs --subject alice --as-of 2024-01-01
    """
    if as_json and as_jsonl:
        raise click.UsageError("--json and --jsonl: choose one")
    point = _point(valid_at, as_of)  # a bad time is refused before the store opens
    grains = list(
        _store(ctx, read=True).beliefs(subject, relation, namespace=namespace, **point)
    )
    if limit is None and not (as_json or as_jsonl):
        limit = TABLE_LIMIT
    shown = grains if limit is None else grains[:limit]
    if as_jsonl:
        for grain in shown:
            click.echo(json.dumps(_row(grain), ensure_ascii=False))
    elif as_json:
        click.echo(dump_json([_row(g) for g in shown]))
    else:
        click.echo(_fitted_table([_row(g) for g in shown], BELIEF_COLUMNS))
    if len(grains) > len(shown):
        more = len(grains) - len(shown)
        click.echo(
            f"note: {more:,} more belief{'s' if more != 1 else ''} not shown "
            f"({len(grains):,} in all); use --limit N, or --json/--jsonl",
            err=True,
        )


def _print_grains(grains: list[Grain], as_json: bool) -> None:
    rows = [_row(g) for g in grains]
    click.echo(dump_json(rows) if as_json else _fitted_table(rows, BELIEF_COLUMNS))


@cli.command("search")
@click.argument("text")
@click.option("--namespace")
@click.option("--limit", default=10, show_default=True,
              type=click.IntRange(1, MAX_LIMIT), help=f"At most {MAX_LIMIT:,} beliefs.")  # fmt: skip
@time_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_context
def search_cmd(ctx: click.Context, text: str, namespace: str | None, limit: int,
               valid_at: str | None, as_of: str | None, as_json: bool) -> None:  # fmt: skip
    """Find the beliefs whose subject, relation or object match TEXT, best first.

    Example:

        oms-rdf --store mem.db search "rate limiter"
    """
    point = _point(valid_at, as_of)
    grains = _store(ctx, read=True).search(
        text, namespace=namespace, limit=limit, **point
    )
    _print_grains(grains, as_json)


@cli.command("history")
@click.argument("address")
@click.pass_context
def history_cmd(ctx: click.Context, address: str) -> None:
    """Show the supersession chain through a grain, oldest first.

    Example:

        oms-rdf --store mem.db history 3288d0d4...
    """
    store = _store(ctx, read=True)
    rows = [
        {**_row(g), "status": store.status(g).status} for g in store.history(address)
    ]
    click.echo(
        _fitted_table(rows, ["address", "status", "object", "confidence", "valid_from"])
    )


@cli.command("supersede")
@click.argument("old")
@click.argument("source")
@click.option("--justification", help="Why; required to override soft_locked grains.")
@click.option("--by", help="DID of who supersedes.")
@click.pass_context
def supersede_cmd(ctx: click.Context, old: str, source: str, justification: str | None,
                  by: str | None) -> None:  # fmt: skip
    """Replace grain OLD by the grain in SOURCE; print the new address.

    Example:

        oms-rdf --store mem.db supersede 3288d0d4... new.json --justification "moved"
    """
    items = _grains_from(source)
    if len(items) != 1:
        raise click.BadParameter(
            f"holds {len(items)} grains, expected one", param_hint="SOURCE"
        )
    click.echo(_store(ctx).supersede(old, items[0], justification=justification, by=by))


def invalidation_options(fn: F) -> F:
    """The options shared by retract and contradict: who, and when."""
    fn = click.option("--at", help=f"When: {TIME_HELP} (default now).")(fn)
    fn = click.option("--by", help="DID of who asks for it.")(fn)
    return click.argument("address")(fn)


@cli.command("retract")
@invalidation_options
@click.option("--reason", required=True)
@click.pass_context
def retract_cmd(ctx: click.Context, address: str, reason: str, by: str | None,
                at: str | None) -> None:  # fmt: skip
    """Retract a grain without replacement.

    Example:

        oms-rdf --store mem.db retract 3288d0d4... --reason "never said"
    """
    when = _time(at, "--at")
    _store(ctx).retract(address, reason=reason, by=by, at=when)
    click.echo(f"retracted {address}")


@cli.command("contradict")
@invalidation_options
@click.option("--reason")
@click.pass_context
def contradict_cmd(ctx: click.Context, address: str, reason: str | None, by: str | None,
                   at: str | None) -> None:  # fmt: skip
    """Mark a grain contradicted.

    Example:

        oms-rdf --store mem.db contradict 3288d0d4... --reason "sensor fault"
    """
    when = _time(at, "--at")
    _store(ctx).contradict(address, reason=reason, by=by, at=when)
    click.echo(f"contradicted {address}")


@cli.command("query")
@click.argument("sparql")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv", "tsv"]),
              default="table", show_default=True,
              help="How SELECT rows print (CONSTRUCT and DESCRIBE print Turtle).")  # fmt: skip
@time_options
@click.option("--namespace", help="Only the knowledge of this namespace.")
@click.option(
    "--grains", is_flag=True, help="Query the store as laid out (grain layer, index)."
)
@click.pass_context
def query_cmd(ctx: click.Context, sparql: str, fmt: str, valid_at: str | None,
              as_of: str | None, namespace: str | None, grains: bool) -> None:  # fmt: skip
    """Run SPARQL (text, or @FILE) over the knowledge, now or at a bi-temporal point.

    SELECT prints rows, ASK prints true or false, CONSTRUCT and DESCRIBE print Turtle.

    Example:

        oms-rdf --store mem.db query "SELECT ?s ?o WHERE { ?s ?p ?o }" --valid-at 2024-01-01
    """
    text = _text_of(sparql[1:]) if sparql.startswith("@") else sparql
    point = _point(valid_at, as_of)
    store = _store(ctx, read=True)
    try:
        result = store.query(text, namespace=namespace, grains=grains, **point)
    except QueryError as exc:
        if _is_update(text):
            raise QueryError(
                "expected a query (SELECT, ASK, CONSTRUCT or DESCRIBE); found a SPARQL "
                "Update: this is an update, use `oms-rdf update`",
                path="SPARQL",
            ) from exc
        raise
    if isinstance(result, bool):
        click.echo("true" if result else "false")
    elif isinstance(result, Solutions):
        _print_rows(result, fmt)
    else:
        click.echo(dumps_turtle(result), nl=False)


def _is_update(text: str) -> bool:
    """Whether a text that is no query parses as SPARQL Update (only read)."""
    from pyparsing import ParseException
    from rdflib.plugins.sparql.parser import parseUpdate

    try:
        parseUpdate(text)
    except (ParseException, ValueError, TypeError):
        return False
    return True


@cli.command("update")
@click.argument("sparql")
@click.option("--namespace", help="The namespace of the beliefs INSERT DATA adds.")
@click.option("--confidence", type=FiniteFloat(0.0, 1.0), default=1.0,
              show_default=True, help="Their confidence.")  # fmt: skip
@click.option("--by", help="DID of who retracts (DELETE DATA).")
@click.option("--reason", help="Why DELETE DATA retracts (needed for soft_locked).")
@click.pass_context
def update_cmd(ctx: click.Context, sparql: str, namespace: str | None, confidence: float,
               by: str | None, reason: str | None) -> None:  # fmt: skip
    """Apply SPARQL Update (text, or @FILE) as belief operations.

    INSERT DATA adds its triples as beliefs; DELETE DATA retracts the current
    beliefs that assert its triples. The request is one atomic write: a refused
    one writes nothing.

    Example:

        oms-rdf --store mem.db update "INSERT DATA { <urn:a> <urn:knows> <urn:b> }"
    """
    text = _text_of(sparql[1:]) if sparql.startswith("@") else sparql
    report = _store(ctx, create=True).update(
        text, namespace=namespace, confidence=confidence, by=by, reason=reason
    )
    click.echo(
        f"added {report.added}, already believed {report.believed}, "
        f"retracted {len(report.retracted)}, not believed {report.not_believed}"
    )
    for address in report.retracted:
        click.echo(f"retracted {address}")


def _print_rows(result: Solutions, fmt: str) -> None:
    names = [v.value for v in result.variables]
    rows = [
        {n: (None if row[n] is None else _cell(row[n])) for n in names}
        for row in result
    ]
    if fmt == "json":
        click.echo(dump_json(rows))
    elif fmt in ("csv", "tsv"):
        import csv

        writer = csv.writer(
            sys.stdout, delimiter="," if fmt == "csv" else "\t", lineterminator="\n"
        )
        writer.writerow(names)
        writer.writerows(
            [[r[n] if r[n] is not None else "" for n in names] for r in rows]
        )
    else:
        click.echo(_table(rows, names))


def _cell(term: Any) -> str:
    """A term as a cell: IRIs and literals by value, blank nodes as ``_:label``."""
    return str(term) if isinstance(term, ox.BlankNode) else str(term.value)


def _key(path: str) -> SigningKey:
    text = _read(path).decode("ascii", "replace").strip()
    try:
        return SigningKey.from_private_bytes(bytes.fromhex(text))
    except ValueError:
        raise SignatureError(
            f"{path} does not hold a hex Ed25519 private key (as keygen writes)",
            path=path,
        ) from None


@cli.command("serve")
@click.option("--store", "store_path", type=click.Path(file_okay=False),
              help="Directory of the on-disk store (or the global --store).")  # fmt: skip
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=7878, show_default=True, type=click.IntRange(1, 65535))
@click.option("--query-timeout", default=30.0, show_default=True,
              type=FiniteFloat(min=0, min_open=True),
              help="Seconds a query may run before the answer is a 503.")  # fmt: skip
@click.option("--token-file", type=click.Path(dir_okay=False, exists=True),
              help='Bearer tokens: {"TOKEN": {"namespaces": [...] or "*", "write": true}}.')  # fmt: skip
@click.option("--max-body", default=16 * 1024 * 1024, show_default=True,
              type=click.IntRange(min=1), help="Bytes a request body may have (more: 413).")  # fmt: skip
@click.option("--cors", multiple=True, metavar="ORIGIN",
              help="An origin whose browser pages may call the server (repeatable; none by default).")  # fmt: skip
@click.pass_context
def serve_cmd(ctx: click.Context, store_path: str | None, host: str, port: int,
              query_timeout: float, token_file: str | None, max_body: int,
              cors: tuple[str, ...]) -> None:  # fmt: skip
    """Serve the store over HTTP: SPARQL Protocol and Update, Graph Store (read), a page.

    Needs the [server] extra. Example:

        oms-rdf serve --store mem.db --port 7878
    """
    try:
        from ..http.app import load_tokens, serve
    except ImportError:
        raise click.UsageError(
            "serve needs the server extra: pip install 'oms-rdf[server]'"
        ) from None
    tokens = load_tokens(token_file) if token_file else None
    local = store_path or ctx.find_root().obj
    if isinstance(local, str) and "://" not in local:
        _check_store_path(local, create=False)  # a typo is no new, empty store
    _check_bindable(host, port)  # before the store opens, and before "serving on"
    store = _store(ctx, path=store_path)
    mode = "tokens required" if tokens else "read-only, open"
    line = f"serving on http://{host}:{port}/ ({mode}; Ctrl-C to stop)"
    with _announced_when_listening(host, port, line):
        serve(store, host=host, port=port, tokens=tokens, query_timeout=query_timeout,
              max_body=max_body, cors=cors)  # fmt: skip


def _check_bindable(host: str, port: int) -> None:
    """Bind each address of ``host`` as the server will (SO_REUSEADDR, IPv6 only on
    IPv6), then let go, so a port another process listens on is a clear refusal.

    Raises:
        StoreError: ERR_CONFLICT when the address is in use; ERR_STORE when the host
            does not resolve or the address cannot be bound (permission, not local).
    """
    import errno
    import socket

    where = f"{host}:{port}"
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)  # fmt: skip
    except (OSError, UnicodeError) as exc:
        raise StoreError(f"cannot serve on {where}: --host {host!r} does not "
                         f"resolve ({exc})") from None  # fmt: skip
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise StoreError(
                        f"cannot serve on {where}: the address is already in use "
                        "(another process listens there; choose another --port)",
                        code=ErrorCode.CONFLICT,
                    ) from None
                raise StoreError(f"cannot serve on {where}: {exc.strerror}") from None


@contextmanager
def _announced_when_listening(host: str, port: int, line: str) -> Iterator[None]:
    """Print ``line`` once ``host:port`` takes connections (the server binds inside
    ``serve``); a server that fails to start turns into a one-line refusal."""
    import socket
    import threading

    done = threading.Event()
    target = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)

    def announce() -> None:
        while not done.is_set():
            try:
                socket.create_connection((target, port), timeout=1).close()
            except OSError:
                done.wait(0.02)
                continue
            click.echo(line, err=True)
            return

    watcher = threading.Thread(target=announce, name="serving-on", daemon=True)
    watcher.start()
    try:
        yield
    except SystemExit as exc:  # uvicorn exits 3 when it cannot bind after all
        if exc.code in (0, None):
            raise
        raise StoreError(
            f"cannot serve on {host}:{port}: the server did not start (its reason "
            "is on the line above)"
        ) from None
    finally:
        done.set()
        watcher.join(5)


@cli.command("mcp")
@click.option("--store", "store_path", type=click.Path(file_okay=False),
              help="Directory of the on-disk store (or the global --store).")  # fmt: skip
@click.option("--namespace", "namespaces", multiple=True, metavar="NS",
              help="A namespace the session may read and write (repeatable; default: all).")  # fmt: skip
@click.option(
    "--http",
    is_flag=True,
    help="Streamable HTTP at http://HOST:PORT/mcp instead of stdio.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind, with --http.",
)
@click.option("--port", default=7879, show_default=True, type=click.IntRange(1, 65535))
@click.option("--query-timeout", default=30.0, show_default=True, type=click.FloatRange(min=0.1),
              help="Seconds a sparql call may run before it is refused.")  # fmt: skip
@click.pass_context
def mcp_cmd(ctx: click.Context, store_path: str | None, namespaces: tuple[str, ...],
            http: bool, host: str, port: int, query_timeout: float) -> None:  # fmt: skip
    """Serve the store as an agent's memory over MCP (stdio, or --http on loopback).

    Needs the [mcp] extra. Example:

        oms-rdf mcp --store mem.db --namespace work
    """
    import contextlib

    try:
        from ..http.mcp import run
    except ImportError:
        raise click.UsageError(
            "mcp needs the mcp extra: pip install 'oms-rdf[mcp]'"
        ) from None
    if any(not n.strip() for n in namespaces):
        raise click.BadParameter(
            "a namespace cannot be empty", param_hint="--namespace"
        )
    if http:
        _check_bindable(host, port)
    store = _store(ctx, path=store_path, create=True, keep_new=True)
    line = f"MCP on http://{host}:{port}/mcp (no authentication; Ctrl-C to stop)"
    if _KEPT_STORE in ctx.meta:  # a typo in --store is no silent new memory
        note = f"note: no store at {ctx.meta[_KEPT_STORE][0]}: making a new, empty one"
        if http:
            line = f"{line}\n{note}"  # after the line a client waits for
        else:
            click.echo(note, err=True)
    with (
        _announced_when_listening(host, port, line)
        if http
        else contextlib.nullcontext()
    ):
        run(store, http=http, host=host, port=port, namespaces=namespaces or None,
            query_timeout=query_timeout)  # fmt: skip


@cli.command("keygen")
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="Where to write the private key (hex, mode 0600).")  # fmt: skip
@click.option("--seed", help="64 hex digits: a deterministic key (for tests only).")
def keygen_cmd(output: str, seed: str | None) -> None:
    """Make an Ed25519 signing key; print its did:key.

    Example:

        oms-rdf keygen -o agent.key
    """
    try:
        raw = bytes.fromhex(seed) if seed else None
    except ValueError:
        raise click.BadParameter("64 hex digits", param_hint="--seed") from None
    key = generate_key(raw)
    path = Path(output)
    path.touch(mode=0o600)
    path.chmod(0o600)  # touch() leaves an existing file's mode as it was
    path.write_text(key.private_bytes().hex() + "\n")
    click.echo(key.did)


@cli.command("sign")
@click.argument("source")
@click.option("--key", "key_path", required=True, help="Private key file from keygen.")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False), help="Write the envelope here."
)
def sign_cmd(source: str, key_path: str, output: str | None) -> None:
    """Sign a grain (JSON, or a blob with the signed flag) into a COSE_Sign1 envelope.

    A JSON grain is encoded with the signed flag set. Prints the envelope as hex
    unless -o is given. Example:

        oms-rdf sign grain.json --key agent.key -o grain.cose
    """
    items = _grains_from(source)
    if len(items) != 1:
        raise click.BadParameter(
            f"holds {len(items)} grains, expected one", param_hint="SOURCE"
        )
    item = items[0]
    blob = item if isinstance(item, bytes) else Grain.from_dict(item, signed=True).blob
    envelope = sign(blob, _key(key_path))
    if output:
        Path(output).write_bytes(envelope)
        click.echo(content_address(blob))
    else:
        click.echo(envelope.hex())


@cli.command("verify-signature")
@click.argument("source")
def verify_signature_cmd(source: str) -> None:
    """Verify a COSE_Sign1 envelope (binary or hex); print the address and signer.

    Example:

        oms-rdf verify-signature grain.cose
    """
    data = _read(source)
    if not is_envelope(data):
        try:
            data = bytes.fromhex(data.decode("ascii", "replace").strip())
        except ValueError:
            raise SignatureError(
                f"{source} is neither a COSE_Sign1 envelope nor its hex", path=source
            ) from None
    blob, did = verify_signed(data)
    click.echo(f"ok {content_address(blob)} signed by {did}")


@cli.command("disclose")
@click.argument("source")
@click.option(
    "--elide",
    "fields",
    multiple=True,
    required=True,
    help="A field to hide (repeatable).",
)
def disclose_cmd(source: str, fields: tuple[str, ...]) -> None:
    """Print a disclosed view of a grain (blob or JSON) with FIELDS replaced by hashes.

    Example:

        oms-rdf disclose grain.mg --elide user_id --elide subject
    """
    items = _grains_from(source)
    if len(items) != 1:
        raise click.BadParameter(
            f"holds {len(items)} grains, expected one", param_hint="SOURCE"
        )
    grain = (
        Grain.from_blob(items[0])
        if isinstance(items[0], bytes)
        else Grain.from_dict(items[0])
    )
    click.echo(dump_json(disclose(grain.fields, grain.address, fields)))


@cli.command("evidence")
@click.argument("address")
@click.option("--kind", type=click.Choice(["supporting", "refuting"]), required=True)
@click.option("--strength", type=float, default=0.8, show_default=True)
@click.option("--note")
@click.pass_context
def evidence_cmd(ctx: click.Context, address: str, kind: str, strength: float,
                 note: str | None) -> None:  # fmt: skip
    """Record evidence for or against a grain (sequential test); print its new state.

    Example:

        oms-rdf --store mem.db evidence 3288d0d4... --kind refuting --strength 0.85
    """
    result = _store(ctx).evidence(address, kind, strength, note)
    click.echo(f"{result.status}  log ratio {result.log_ratio:.4f}  "
               f"effective confidence {result.effective_confidence:.2f}")  # fmt: skip


@cli.command("revise")
@click.argument("old")
@click.argument("source")
@click.option(
    "--force",
    is_flag=True,
    help="Override entrenchment (needs --by an authorized DID).",
)
@click.option("--by", help="DID of who revises.")
@click.option(
    "--authorized", multiple=True, help="DIDs this store lets force a revision."
)
@click.option("--justification")
@click.pass_context
def revise_cmd(ctx: click.Context, old: str, source: str, force: bool, by: str | None,
               authorized: tuple[str, ...], justification: str | None) -> None:  # fmt: skip
    """Supersede OLD by the grain in SOURCE if its entrenchment tier allows.

    Example:

        oms-rdf --store mem.db revise 3288d0d4... new.json
    """
    items = _grains_from(source)
    if len(items) != 1:
        raise click.BadParameter(
            f"holds {len(items)} grains, expected one", param_hint="SOURCE"
        )
    store = _store(ctx)
    store.revision.authorized = frozenset(authorized)
    click.echo(
        store.revise(old, items[0], force=force, by=by, justification=justification)
    )


FORMAT_CHOICE = click.Choice(list(FORMATS))


@cli.command("export")
@click.argument("dest")
@click.option(
    "--format", "fmt", type=FORMAT_CHOICE, help="Default: from the file suffix."
)
@click.option("--grains/--plain", default=None,
              help="Carry the grains and their index state, or only the plain knowledge "
                   "(default: plain for turtle, ntriples and rdfxml).")  # fmt: skip
@time_options
@click.option("--namespace", help="Plain knowledge of this namespace only.")
@click.pass_context
def export_cmd(ctx: click.Context, dest: str, fmt: str | None, grains: bool | None,
               valid_at: str | None, as_of: str | None,
               namespace: str | None) -> None:  # fmt: skip
    """Write the store (grains) or its knowledge (plain triples) to DEST (- for stdout).

    Example:

        oms-rdf --store mem.db export backup.trig
        oms-rdf --store mem.db export then.ttl --valid-at 2024-01-01
    """
    out: Any = sys.stdout.buffer if dest == "-" else dest
    fmt = format_for(
        "x" if dest == "-" else dest, fmt or ("trig" if dest == "-" else None)
    )
    point = _point(valid_at, as_of)
    count = _store(ctx, read=True).export(out, format=fmt, grains=grains,
                                          namespace=namespace, **point)  # fmt: skip
    plain = fmt in PLAIN_FORMATS if grains is None else not grains
    click.echo(f"exported {count} {'triples' if plain else 'grains'}", err=dest == "-")


@cli.command("import")
@click.argument("source")
@click.option(
    "--format", "fmt", type=FORMAT_CHOICE, help="Default: from the file suffix."
)
@click.option("--skip-invalid", is_flag=True, help="Skip bad records and report them.")
@click.option("--namespace", help="Namespace of beliefs adopted from a foreign graph.")
@click.option("--confidence", type=click.FloatRange(0, 1), default=1.0, show_default=True,
              help="Confidence of beliefs adopted from a foreign graph.")  # fmt: skip
@click.option("--base-iri", help="Resolves relative IRIs (default: the file's URI).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.pass_context
def import_cmd(ctx: click.Context, source: str, fmt: str | None, skip_invalid: bool,
               namespace: str | None, confidence: float, base_iri: str | None,
               quiet: bool) -> None:  # fmt: skip
    """Import SOURCE (- for stdin) into the store: all or nothing unless --skip-invalid.

    RDF that is not an oms_rdf export (Turtle, N-Triples, TriG, N-Quads, JSON-LD,
    RDF/XML) is adopted: each triple becomes a belief, named graphs kept; triples
    already believed in the namespace are counted, not added. Example:

        oms-rdf --store mem.db import people.ttl --namespace crm --confidence 0.8
    """
    src: Any = sys.stdin.buffer if source == "-" else source
    size = 0 if source == "-" else Path(source).stat().st_size  # before a store is made
    if source != "-" and Path(source).is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), source)
    store = _store(ctx, create=True)
    show = not quiet and size > 0 and sys.stderr.isatty()
    with (
        click.progressbar(length=size, label="reading", file=sys.stderr)
        if show
        else _no_bar() as bar,
        Bars() as stages,
    ):
        report = store.import_(src, format=fmt or ("nquads" if source == "-" else None),
                               progress=bar.update, skip_invalid=skip_invalid,
                               namespace=namespace, confidence=confidence,
                               base_iri=base_iri, stage=None if quiet else stages)  # fmt: skip
    for where, why in report.skipped:
        click.echo(f"skipped {where}: {why}", err=True)
    click.echo(
        f"imported {report.added} grains ({report.quads} quads), already believed "
        f"{report.believed}, skipped {len(report.skipped)}"
    )


class _NoBar:
    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n: int) -> None:
        """Ignore progress."""


def _no_bar() -> _NoBar:
    return _NoBar()


@cli.command("demo")
def demo_cmd() -> None:
    """Tell a small belief story on an in-memory store and ask it the temporal questions.

    Example:

        oms-rdf demo
    """
    from .demo import run_demo

    run_demo(click.echo)


register_privacy(cli, _store)


def main() -> None:
    """Run the ``oms-rdf`` command line."""
    cli(prog_name="oms-rdf")
