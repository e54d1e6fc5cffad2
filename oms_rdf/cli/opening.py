"""Opening the store a command names: an on-disk folder, a SPARQL server or Virtuoso.

The group's options (``--store``, ``--query-url``…, ``--virtuoso``) become one
:class:`Where`; :func:`open_store` opens it for the command and closes it after.
Only a command that brings beliefs in may make a new on-disk store, and only where
nothing is or in an empty folder; a refused first write takes it away again
(:func:`undo_new_store`, called by the group's error handler).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, unquote, urlsplit

import click

from ..errors import NotFoundError, OmsError, SchemaError, StoreError
from ..store import GrainStore

if TYPE_CHECKING:  # the server backends need the [remote] extra: imported when used
    from ..backends.protocol import SparqlBackend
    from ..backends.virtuoso import VirtuosoBackend

_NOT_IN_HOSTS = frozenset('<>"{}|\\^`')
NEW_STORE = "oms_rdf.new_store"  # ctx.meta: the store this command made, if any
KEPT_STORE = "oms_rdf.kept_store"  # ctx.meta: the same, kept whatever happens
NEW_FOLDERS = "oms_rdf.new_folders"  # ctx.meta: the top folder made above it, if any
ENDPOINTS = ("--query-url", "--update-url", "--store-url")


@dataclass(frozen=True, slots=True, kw_only=True)
class Where:
    """Where the group's options say the store is (the first given of these wins)."""

    virtuoso: str | None = None
    endpoints: tuple[str, str | None, str | None] | None = None
    path: str | None = None
    forward_only: bool = False  # --forward-only: recorded in the store's settings


def open_store(
    ctx: click.Context,
    *,
    read: bool = False,
    create: bool = False,
    keep_new: bool = False,
    path: str | None = None,
    **options: Any,
) -> GrainStore:
    """Open the store of the group's options (or ``path``), closed after the command.

    A read command opens an on-disk store read-only when another process holds it.
    Only a command that brings beliefs in (``create``) may make a new one; every
    other refuses a path that holds none. A new store is taken away when the
    command is refused, unless ``keep_new`` (a session's store, such as an agent's
    memory): then :func:`made_store` says where it was made. ``options`` go to
    :class:`~oms_rdf.GrainStore` (``authorized=``…).

    Raises:
        SchemaError: ERR_SCHEMA for an empty --store or a malformed server URL.
        NotFoundError: ERR_NOT_FOUND for a path that holds no store.
        StoreError: ERR_STORE for a store another process holds, for a write.
    """
    where = where_of(ctx, path)
    if where.forward_only and not read:  # a read takes the store's own setting
        options.setdefault("forward_only", True)
    if where.virtuoso is not None:
        return closing(ctx, GrainStore(backend=virtuoso(where.virtuoso), **options))
    if where.endpoints is not None:
        return closing(ctx, GrainStore(backend=endpoints(where.endpoints), **options))
    if where.path is not None and "://" in where.path:
        return closing(ctx, GrainStore(backend=oxigraph(where.path), **options))
    if where.path is None:
        raise click.UsageError(
            "this command needs --store PATH or URL, or --query-url (or $OMS_RDF_STORE)"
        )
    if check_store_path(where.path, create=create):
        folder = Path(where.path)
        ctx.meta[KEPT_STORE if keep_new else NEW_STORE] = (folder, folder.is_dir())
        if not keep_new:  # taken away with it if the command is refused
            ctx.meta[NEW_FOLDERS] = _missing_above(folder)
    return closing(ctx, on_disk(where.path, read=read, **options))


def where_of(ctx: click.Context, path: str | None = None) -> Where:
    """The group's :class:`Where`, or the command's own ``--store`` ``path``."""
    where: Where = ctx.find_root().obj
    if path is None:
        return where
    return Where(path=path, forward_only=where.forward_only)


def made_store(ctx: click.Context) -> Path | None:
    """The folder of the store ``open_store(..., keep_new=True)`` made, if it made one."""
    made: tuple[Path, bool] | None = ctx.meta.get(KEPT_STORE)
    return None if made is None else made[0]


def on_disk(path: str, *, read: bool, **options: Any) -> GrainStore:
    """Open an on-disk store; for a read, a read-only view if another holds it."""
    try:
        return GrainStore(path, **options)
    except StoreError as exc:
        # Held by another process, or not writable here (a read-only mount, a
        # folder this user may only read): a read is still answered.
        unwritable = ("read-only file system", "permission denied")
        busy = ("lock", *unwritable)
        if not any(why in str(exc).lower() for why in busy):
            raise
        if any(why in str(exc).lower() for why in unwritable):
            if read:
                click.echo(
                    "note: this store cannot be written here; reading it", err=True
                )
                return GrainStore(path, read_only=True, **options)
            raise StoreError(
                f"the store at {path} cannot be written here (a folder this user "
                "may only read, or a read-only mount); commands that read it answer",
                code=exc.code,
                path=exc.path,
            ) from exc
        if not read:
            said = exc.message  # the store says who holds it; said once
            if "another process" not in said:
                said += "; another process has it open for writing"
            raise StoreError(
                f"{said}; use `oms-rdf serve` to share one store between processes",
                code=exc.code,
                path=exc.path,
            ) from exc
    click.echo(
        "note: another process holds this store; reading a read-only view as of now "
        "(run `oms-rdf serve` there to read and write together)",
        err=True,
    )
    return GrainStore(path, read_only=True, **options)


def refuse_missing(ctx: click.Context, path: str | None) -> None:
    """Refuse an on-disk --store (or ``path``) that holds no store, before anything."""
    where = where_of(ctx, path)
    local = where.path if where.virtuoso is None and where.endpoints is None else None
    if local is not None and "://" not in local:
        check_store_path(local, create=False)  # a typo is no new, empty store


def check_store_path(path: str, *, create: bool) -> bool:
    """Refuse a --store path that holds no store, unless ``create`` and it is free;
    return whether opening it will make a new store.

    A store is a RocksDB folder, which always holds a ``CURRENT`` file; a path
    whose vacuum a crash interrupted (``PATH.vacuum-ready`` beside it) is one too,
    since opening it finishes the swap. A command that writes may create a store
    where nothing is, or in an empty folder, never among other files.

    Raises:
        SchemaError: ERR_SCHEMA for an empty path.
        NotFoundError: ERR_NOT_FOUND naming the path and what is there.
    """
    if path == "":
        raise SchemaError(
            "--store: expected the folder of a store or a server's http(s) URL; "
            "found ''"
        )
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
    empty = folder.is_dir() and not any(folder.iterdir())
    if create and empty:
        return True
    what = "a folder of other files" if folder.is_dir() else "a file"
    raise NotFoundError(
        f"no store at {path}: it is {'an empty folder' if empty else what}, not a "
        "store (a store's folder holds RocksDB files, CURRENT among them)"
    )


def undo_new_store(ctx: click.Context) -> None:
    """Remove the store a refused write made: where nothing was, nothing stays, and
    a folder that was empty is left empty (a refused write changes nothing).

    A store that holds a write is kept: the command failed after its write
    committed (its output could not be written: a full disk, a closed pipe).
    """
    made: tuple[Path, bool] | None = ctx.meta.pop(NEW_STORE, None)
    if made is None or _holds_a_write(made[0]):
        return
    folder, was_empty_folder = made
    above: Path | None = ctx.meta.pop(NEW_FOLDERS, None)
    if above is not None:  # the folders opening it made go too
        shutil.rmtree(above, ignore_errors=True)
        return
    if not was_empty_folder:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _missing_above(folder: Path) -> Path | None:
    """The topmost missing folder above ``folder``, which opening it makes."""
    top = None
    for parent in folder.absolute().parents:
        if parent.exists():
            break
        top = parent
    return top


def _holds_a_write(folder: Path) -> bool:
    """Whether the store in ``folder`` holds a committed write: every write
    appends an audit event (the command closed its store before this)."""
    try:
        store = GrainStore(folder, read_only=True)
    except OmsError:
        return False  # no store was made, or not one that opens
    try:
        return store.verify_audit().events > 0
    finally:
        store.close()


def closing(ctx: click.Context, store: GrainStore) -> GrainStore:
    """Close the store (flush it, release its lock or connections) after the command."""
    ctx.call_on_close(store.close)
    return store


def server_url(option: str, url: str) -> SplitResult:
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
    host = parts.hostname or ""
    if parts.scheme not in ("http", "https") or not host or port == 0:
        raise SchemaError(f"{expected}; found {url!r}")
    if any(c.isspace() or c in _NOT_IN_HOSTS for c in host):  # RFC 3986 reg-name
        why = f"the host {host!r} holds a character no host name may"
        raise SchemaError(f"{expected}; found {url!r} ({why})")
    return parts


def oxigraph(url: str) -> SparqlBackend:
    """A backend for an Oxigraph server (``/query``, ``/update``, ``/store``)."""
    from ..backends.protocol import SparqlBackend  # needs the [remote] extra

    server_url("--store", url)
    return SparqlBackend.oxigraph(url)


def endpoints(urls: tuple[str, str | None, str | None]) -> SparqlBackend:
    """A backend for a SPARQL 1.1 server's query, update and Graph Store endpoints."""
    from ..backends.protocol import SparqlBackend  # needs the [remote] extra

    for option, url in zip(ENDPOINTS, urls, strict=True):
        if url is not None:
            server_url(option, url)
    return SparqlBackend(*urls)


def virtuoso(url: str) -> VirtuosoBackend:
    """A Virtuoso backend for ``http(s)://[user:password@]host:port``."""
    from ..backends.virtuoso import VirtuosoBackend  # needs the [remote] extra

    parts = server_url("--virtuoso", url)
    host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname
    base = f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    return VirtuosoBackend(base, user=user, password=password)
