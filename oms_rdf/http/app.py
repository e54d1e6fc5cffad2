"""``oms-rdf serve``: the store over HTTP, for every client that is not this process.

- ``/sparql``: the SPARQL 1.1 Protocol (GET, POST form, POST
  ``application/sparql-query``) over the dataset ``store.query`` uses, with
  ``default-graph-uri``/``named-graph-uri`` and the extension parameters
  ``valid_at`` and ``as_of`` (ISO 8601 or epoch ms) for time travel. SELECT and ASK
  answer in SPARQL JSON, XML, CSV or TSV; CONSTRUCT and DESCRIBE in Turtle,
  N-Triples or JSON-LD, by content negotiation. A malformed query is a 400 with
  the parser's message; a query over its time limit a 503, and cancelled (an
  answer that streams stops between two rows; what pyoxigraph 0.5 evaluates in
  one step, such as an aggregate, keeps its worker until it ends). SPARQL Update over GET, or a request with both ``query`` and
  ``update``, is a 400 (SPARQL 1.1 Protocol §2.1, §2.2).
- ``/store``: the Graph Store Protocol, read-only (``?default``, ``?graph=IRI``),
  with ``valid_at``/``as_of``: the knowledge with the exact terms the grains record.
- ``/v1/facts``: the facts API (:mod:`oms_rdf.http.facts`), described at ``/openapi.json``
  and, for people, ``/docs``.
- ``/``: a small page to run a query at a point in time.

- SPARQL Update at ``/sparql`` (``update=``, or a body of type
  ``application/sparql-update``) as belief operations (:mod:`oms_rdf.io.update`):
  ``INSERT DATA`` adopts, ``DELETE DATA`` retracts through the policies (a refusal is
  a 403 naming the spec code, and the store is unchanged), any other form is a 400.

Limits (:mod:`oms_rdf.rdf.limits`): a request body over ``max_body`` bytes is a 413,
answered from its ``content-length`` before it is read; query text over
``MAX_QUERY_CHARS`` or nested deeper than ``MAX_DEPTH`` is a 400 before any parser
runs. Store calls never run on the event loop: queries on a lane of
``query_workers`` threads, within ``query_timeout``; everything else (writes
included) on a lane of its own, without a time limit, so that a write is never
left running behind an error (a write answers when it has committed or failed).
Every error body is JSON ``{"code", "message", "path"}``.

Bearer tokens (:func:`load_tokens`) are scoped to namespaces and to reading or
writing; a token sees only the knowledge of its namespaces, through every route
(``GRAPH`` and ``DESCRIBE`` included, since the dataset itself is narrowed). Without
tokens the server is read-only and open to whoever reaches it (it binds loopback
by default, and :func:`serve` bound to loopback answers only to loopback ``Host``
names, against DNS rebinding). Starlette and uvicorn come with the ``[server]`` extra.

>>> from oms_rdf import GrainStore
>>> app = create_app(GrainStore())
>>> sorted({r.path for r in app.routes})[:5]
['/', '/docs', '/openapi.json', '/sparql', '/store']
"""

from __future__ import annotations

import hmac
import io
import json
import queue
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs

import pyoxigraph as ox
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import (
    DecodeError,
    ErrorCode,
    OmsError,
    PolicyError,
    QueryError,
    SchemaError,
)
from ..rdf.limits import check_query
from ..rdf.results import SOLUTION_TYPES, write_boolean, write_solutions
from ..store import GrainStore, Solutions
from ..times import to_millis
from .facts import body_text, error_response, fact_routes
from .lanes import Job, Lane, runner_on, wait_on

__all__ = [
    "MAX_BODY",
    "RESULT_TYPES",
    "Token",
    "create_app",
    "load_tokens",
    "serialize_results",
    "serve",
]

# Media types by answer kind, the first being the default.
RESULT_TYPES = {
    "solutions": SOLUTION_TYPES,
    "graph": ("text/turtle", "application/n-triples", "application/ld+json"),
}
_RDF_FORMATS = {
    "text/turtle": ox.RdfFormat.TURTLE,
    "application/n-triples": ox.RdfFormat.N_TRIPLES,
    "application/ld+json": ox.RdfFormat.JSON_LD,
}
_QUERY_FORM = "application/x-www-form-urlencoded"
MAX_BODY = 16 * 1024 * 1024  # bytes of a request body, by default
_ROWS_PER_CHECK = 64  # rows read between two looks at the query's time limit
_T = TypeVar("_T")
_RDFLIB_DEFAULT = "urn:x-rdflib:default"
# A federated query would make the server fetch whatever IRI the client names.
_FEDERATED = re.compile(r"\bSERVICE\s+(?:SILENT\s+)?[<?$\w]", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class Token:
    """What a bearer token may do: read (and write) the knowledge of its namespaces,
    and, with ``erase``, erase grains (compliance erasure is its own scope)."""

    namespaces: tuple[str, ...] | None = None  # None: every namespace
    write: bool = False
    erase: bool = False


_OPEN = Token()  # no token file: every namespace, read-only


def load_tokens(path: str | Path) -> dict[str, Token]:
    """Read a token file: ``{"TOKEN": {"namespaces": ["crm"] or "*", "write": true}}``;
    ``"erase": true`` adds the erase scope.

    Raises:
        SchemaError: ERR_SCHEMA for a file that is not such a JSON object.
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SchemaError(f"cannot read the token file {path}: {exc}") from None
    tokens: dict[str, Token] = {}
    if not isinstance(data, dict):
        raise SchemaError(f"{path}: expected a JSON object of tokens")
    for secret, grant in data.items():
        namespaces = grant.get("namespaces") if isinstance(grant, dict) else None
        write = grant.get("write", False) if isinstance(grant, dict) else None
        erase = grant.get("erase", False) if isinstance(grant, dict) else None
        valid = namespaces == "*" or (
            isinstance(namespaces, list)
            and namespaces
            and all(isinstance(n, str) for n in namespaces)
        )
        if (
            len(secret) < 16
            or not valid
            or not isinstance(write, bool)
            or not isinstance(erase, bool)
        ):
            raise SchemaError(
                f'{path}: each token (16+ characters) needs "namespaces" (a list, or '
                '"*") and optional booleans "write" and "erase"',
                path=f"$.{secret[:4]}…",
            )
        scope = None if namespaces == "*" else tuple(namespaces or ())
        tokens[secret] = Token(namespaces=scope, write=write, erase=erase)
    return tokens


def create_app(
    store: GrainStore,
    *,
    tokens: Mapping[str, Token] | None = None,
    query_timeout: float = 30.0,
    max_body: int = MAX_BODY,
    query_workers: int = 4,
    store_workers: int = 8,
    cors: Sequence[str] = (),
    hosts: Sequence[str] | None = None,
) -> Starlette:
    """Return the ASGI app serving ``store`` (see the module docstring).

    ``hosts``, when given, are the only names the ``Host`` header may carry (a
    page on another site that rebinds its DNS name to this address is refused).

    ``cors`` lists the origins (``https://app.example``) whose pages may call the
    server from a browser; none by default, so that no other site's page reads
    its answers.

    ``app.state.lanes`` holds its two worker lanes (queries, and every other store
    call); :func:`serve` closes them on a stop.
    """
    queries = Lane("oms-query", workers=query_workers)
    calls = Lane("oms-store", workers=store_workers, backlog=256)

    def authorize(request: Request) -> Token | Response:
        if tokens is None:
            return _OPEN
        header = request.headers.get("authorization", "")
        given = header[7:].strip() if header.lower().startswith("bearer ") else ""
        for secret, token in tokens.items():
            if given and hmac.compare_digest(given.encode(), secret.encode()):
                return token
        return error_response(401, ErrorCode.INVALIDATION_DENIED,
                              "a bearer token is needed (Authorization: Bearer TOKEN)",
                              headers={"www-authenticate": "Bearer"})  # fmt: skip

    async def sparql(request: Request) -> Response:
        token = authorize(request)
        if isinstance(token, Response):
            return token
        try:
            params = await _params(request)
        except OmsError as exc:
            return _refusal(exc)
        if "update" in params:
            if request.method != "POST" or "query" in params:
                return error_response(400, ErrorCode.QUERY, (
                    "SPARQL Update comes only by POST, and never with a query "
                    "(SPARQL 1.1 Protocol §2.2)"))  # fmt: skip
            return await _update(calls, store, token, params)
        texts = params.get("query", [])
        if any(_FEDERATED.search(text) for text in texts):
            return error_response(400, ErrorCode.QUERY,
                "SERVICE is refused: this endpoint does not send requests elsewhere")  # fmt: skip
        if len(texts) != 1:
            return error_response(400, ErrorCode.QUERY,
                "give exactly one query (parameter `query`, or a body of type "
                "application/sparql-query)")  # fmt: skip
        try:
            check_query(texts[0])
        except QueryError as exc:
            return _refusal(exc)
        # rdflib's SPARQLStore names the default graph urn:x-rdflib:default.
        default_uris = [
            u for u in params.get("default-graph-uri", []) if u != _RDFLIB_DEFAULT
        ] or None
        named_uris = params.get("named-graph-uri") or None
        accept = request.headers.get("accept", "*/*")

        def answer(job: Job) -> tuple[bytes, str]:
            valid_at, as_of = _point(params)
            job.check()
            result = store.query(texts[0], valid_at=valid_at, as_of=as_of,
                                 namespace=token.namespaces,
                                 default_graph_uris=default_uris,
                                 named_graph_uris=named_uris)  # fmt: skip
            return serialize_results(result, accept, check=job.check)

        return await _run(queries, answer, query_timeout)

    async def graph_store(request: Request) -> Response:
        token = authorize(request)
        if isinstance(token, Response):
            return token
        params = {k: request.query_params.getlist(k) for k in request.query_params}
        if ("graph" in params) == ("default" in params):
            return error_response(
                400, ErrorCode.QUERY, "give either ?default or ?graph=IRI"
            )
        accept = request.headers.get("accept", "*/*")
        media = _negotiate(accept, RESULT_TYPES["graph"])
        if media is None:
            return _not_acceptable(RESULT_TYPES["graph"])

        def answer(job: Job) -> tuple[bytes, str]:
            valid_at, as_of = _point(params)
            snapshot = store.snapshot(
                valid_at=valid_at, as_of=as_of, namespace=token.namespaces
            )
            job.check()
            name = params["graph"][0] if "graph" in params else None
            wanted = ox.DefaultGraph() if name is None else _iri(name)
            triples = [
                ox.Triple(q.subject, q.predicate, q.object)
                for q in snapshot
                if q.graph_name == wanted
            ]
            if name is not None and not triples:
                raise LookupError(f"no graph {name} holds knowledge at that point")
            return _rdf(triples, media), media

        return await _run(queries, answer, query_timeout)

    async def page(request: Request) -> Response:
        return HTMLResponse(_PAGE)

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        code = {404: ErrorCode.NOT_FOUND, 413: ErrorCode.RANGE}.get(
            status, ErrorCode.SCHEMA
        )
        message = exc.detail if isinstance(exc, HTTPException) else "internal error"
        headers = getattr(exc, "headers", None)
        return error_response(status, code if status < 500 else ErrorCode.STORE,
                              message, headers=headers)  # fmt: skip

    app = Starlette(
        routes=[
            Route("/sparql", sparql, methods=["GET", "POST"]),
            Route("/store", graph_store, methods=["GET", "HEAD"]),
            Route("/", page, methods=["GET"]),
            *fact_routes(store, authorize, run=runner_on(calls)),
        ],
        middleware=[
            *(
                [
                    Middleware(
                        CORSMiddleware,
                        allow_origins=list(cors),
                        allow_methods=["GET", "POST", "PUT", "DELETE"],
                        allow_headers=["authorization", "content-type"],
                    )
                ]
                if cors
                else []
            ),
            *([Middleware(_HostCheck, hosts=hosts)] if hosts is not None else []),
            Middleware(_BodyLimit, max_body=max_body),
        ],
        exception_handlers={HTTPException: http_error, Exception: http_error},
    )
    app.state.lanes = (queries, calls)
    return app


async def _update(
    lane: Lane, store: GrainStore, token: Token, params: dict[str, list[str]]
) -> Response:
    """SPARQL Update as belief operations, in the token's namespace."""
    if not token.write:
        why = "this token may only read" if token is not _OPEN else (
            "this server holds no write tokens (start it with --token-file)")  # fmt: skip
        return error_response(403, ErrorCode.INVALIDATION_DENIED, why)
    texts = params["update"]
    asked = params.get("namespace", [None])[0]
    scope = token.namespaces
    if scope is not None and asked is None and len(scope) == 1:
        asked = scope[0]
    if scope is not None and asked is None:  # the shared namespace: not this token's
        return error_response(403, ErrorCode.INVALIDATION_DENIED,
            f"without ?namespace= an update writes the shared namespace, outside this "
            f"token; name one of {list(scope)}", path="namespace")  # fmt: skip
    if scope is not None and asked not in scope:
        return error_response(403, ErrorCode.INVALIDATION_DENIED,
            f"this token may not write namespace {asked!r}; its namespaces are {list(scope)}",
            path="namespace")  # fmt: skip
    if len(texts) != 1:
        return error_response(400, ErrorCode.QUERY, "give exactly one update")
    try:
        check_query(texts[0], update=True)
    except QueryError as exc:
        return _refusal(exc)

    def apply(job: Job) -> tuple[bytes, str]:
        report = store.update(texts[0], namespace=asked)
        body = {"added": report.added, "believed": report.believed,
                "retracted": report.retracted, "not_believed": report.not_believed}  # fmt: skip
        return json.dumps(body).encode(), "application/json"

    return await _run(lane, apply, None)


def serve(
    store: GrainStore,
    *,
    host: str = "127.0.0.1",
    port: int = 7878,
    tokens: Mapping[str, Token] | None = None,
    query_timeout: float = 30.0,
    max_body: int = MAX_BODY,
    grace: float = 3.0,
    cors: Sequence[str] = (),
) -> None:
    """Serve ``store`` until SIGINT or SIGTERM, then flush it and return.

    A stop is bounded: uvicorn gives the requests in flight ``grace`` seconds,
    the queries still running are cancelled (and given a second more), the writes
    in flight are waited for (up to ten times ``grace``: a write is atomic, it is
    never cut in the middle), and the store is flushed. A query pyoxigraph cannot
    interrupt may still hold a worker then: the process ends at once after the
    flush (its lock goes with it) instead of waiting for that query.
    """
    import os
    import signal

    import uvicorn

    def stop(signum: int, frame: object) -> None:
        raise _SignalledError

    if tokens is None and host not in _LOOPBACK:
        print(f"oms-rdf serve: warning: {host} is not loopback and there is no token "
              "file: anyone who reaches it reads every namespace", file=sys.stderr)  # fmt: skip
    # Bound to loopback, only loopback names: DNS rebinding cannot reach it.
    hosts = list(_LOOPBACK) if host in _LOOPBACK else None
    app = create_app(store, tokens=tokens, query_timeout=query_timeout,
                     max_body=max_body, cors=cors, hosts=hosts)  # fmt: skip
    queries, calls = app.state.lanes
    previous = {
        sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning",
                    timeout_graceful_shutdown=max(1, round(grace)))  # fmt: skip
    except _SignalledError:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        stopped = queries.close(grace=min(grace, 1.0))  # cancelled: they stop at once
        written = calls.close(grace=10 * grace)
        store.flush()
    if not (stopped and written):
        print("oms-rdf serve: work still running at the stop was abandoned; the store "
              "was flushed", file=sys.stderr, flush=True)  # fmt: skip
        os._exit(0)


class _SignalledError(Exception):
    """SIGINT or SIGTERM, after uvicorn's graceful shutdown."""


def serialize_results(
    result: Any, accept: str, *, check: Callable[[], None] | None = None
) -> tuple[bytes, str]:
    """Return a query result in the media type ``accept`` prefers, and that type.

    ``check`` is called every few rows; what it raises stops the answer (and lets
    go of the result on this thread).

    Raises:
        QueryError: ERR_QUERY when no type the answer can take is acceptable.
    """
    kind = "solutions" if isinstance(result, bool | Solutions) else "graph"
    media = _negotiate(accept, RESULT_TYPES[kind])
    if media is None:
        if not isinstance(result, bool):
            result.close()  # pyoxigraph results die on the thread that made them
        raise QueryError(
            f"none of {accept!r} is a type this answer comes in: "
            f"{', '.join(RESULT_TYPES[kind])}"
        )
    if isinstance(result, bool):
        return write_boolean(result, media), media
    rows = result if check is None else _polled(result, check)
    if kind == "graph":
        return _rdf(rows, media), media
    names = [v.value for v in result.variables]
    return write_solutions(names, rows, media), media


def _polled(result: Any, check: Callable[[], None]) -> Iterator[Any]:
    """The rows of ``result``, calling ``check`` every few; the result is let go
    of here, on its own thread, however the reading ends."""
    rows = iter(result)
    try:
        for n, row in enumerate(rows):
            if n % _ROWS_PER_CHECK == 0:
                check()
            yield row
    finally:
        close = getattr(rows, "close", None)
        if close is not None:
            close()
        result.close()
        del rows, result


# --- request handling -----------------------------------------------------------


async def _params(request: Request) -> dict[str, list[str]]:
    """The protocol's parameters, from the URL and a POST's body.

    Raises:
        DecodeError: ERR_CORRUPT for a body that is not UTF-8 (or a form whose
            escapes are not).
    """
    params = {k: request.query_params.getlist(k) for k in request.query_params}
    if request.method == "POST":
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        if kind == _QUERY_FORM:  # parsed here: no multipart library for a form
            try:
                form = parse_qs(body_text(await request.body()), keep_blank_values=True,
                                errors="strict")  # fmt: skip
            except UnicodeDecodeError:
                raise DecodeError(
                    "the form's %-escapes are not UTF-8", path="$"
                ) from None
            for key, values in form.items():
                params.setdefault(key, []).extend(values)
        elif kind in ("application/sparql-query", "application/sparql-update"):
            key = "query" if kind.endswith("query") else "update"
            params.setdefault(key, []).append(body_text(await request.body()))
    return params


def _point(params: dict[str, list[str]]) -> tuple[int | None, int | None]:
    """The bi-temporal point asked for (``valid_at``, ``as_of``), in epoch ms."""
    valid = (
        to_millis(params["valid_at"][0], "valid_at") if "valid_at" in params else None
    )
    known = to_millis(params["as_of"][0], "as_of") if "as_of" in params else None
    return valid, known


async def _run(
    lane: Lane, answer: Callable[[Job], tuple[bytes, str]], timeout: float | None
) -> Response:
    """Evaluate on a lane, within the time limit; map errors to statuses."""
    try:
        body, media = await wait_on(lane, answer, timeout)
    except TimeoutError:
        return error_response(503, ErrorCode.QUERY,
            f"the query ran over the server's limit of {timeout:g} s and was cancelled",
            headers={"retry-after": "1"})  # fmt: skip
    except queue.Full:
        return error_response(503, ErrorCode.STORE,
            "the server is busy: too many requests are waiting; try again",
            headers={"retry-after": "1"})  # fmt: skip
    except LookupError as exc:
        return error_response(404, ErrorCode.NOT_FOUND, str(exc))
    except RecursionError:
        return error_response(400, ErrorCode.QUERY, "the request nests too deeply")
    except OmsError as exc:
        return _refusal(exc)
    return Response(body, media_type=media)


def _refusal(exc: OmsError) -> Response:
    """An error of ours as a response: a policy's refusal is a 403, the caller's
    fault a 400, the store's a 500."""
    if isinstance(exc, PolicyError):
        status = 403
    else:
        status = 400 if isinstance(exc, ValueError) else 500
    return error_response(status, exc.code, exc.message, exc.path)


class _TooLargeError(Exception):
    """A request body past the server's limit (raised while it is read)."""


_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class _HostCheck:
    """Refuse a request whose ``Host`` names none of ``hosts`` (any port)."""

    def __init__(self, app: ASGIApp, *, hosts: Sequence[str]) -> None:
        self.app, self.hosts = app, {h.lower() for h in hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"host", b"").decode("latin-1").lower()
            name = given.rsplit(":", 1)[0] if not given.endswith("]") else given
            if name.strip("[]") not in self.hosts:
                response = error_response(400, ErrorCode.SCHEMA,
                    f"this server answers only to {sorted(self.hosts)}; the Host "
                    f"header names {given[:100]!r}", path="Host")  # fmt: skip
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class _BodyLimit:
    """Refuse a body over ``max_body`` bytes with a 413: from its content-length
    before reading it, or as soon as the bytes read pass the limit."""

    def __init__(self, app: ASGIApp, *, max_body: int) -> None:
        self.app, self.max_body = app, max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_body:
            await self._refuse(send, int(declared))
            return
        seen = 0
        started = False

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise _TooLargeError
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, watched)
        except _TooLargeError:
            if not started:
                await self._refuse(send, seen)

    async def _refuse(self, send: Send, size: int) -> None:
        response = error_response(413, ErrorCode.RANGE,
            f"the body has {size:,}+ bytes; this server takes at most "
            f"{self.max_body:,} (--max-body)", headers={"connection": "close"})  # fmt: skip
        await response({"type": "http"}, _nothing, send)


async def _nothing() -> Message:  # pragma: no cover - a response never receives
    return {"type": "http.disconnect"}


def _iri(text: str) -> ox.NamedNode:
    try:
        return ox.NamedNode(text)
    except ValueError:
        raise QueryError(f"{text!r} is not an IRI") from None


def _negotiate(accept: str, offered: Iterable[str]) -> str | None:
    """The offered type the Accept header prefers most (ties: the order offered)."""
    ranked: list[tuple[float, int, str]] = []
    for position, part in enumerate(accept.split(",")):
        fields = [f.strip() for f in part.split(";")]
        quality = 1.0
        for field in fields[1:]:
            if field.startswith("q="):
                try:
                    quality = float(field[2:])
                except ValueError:
                    quality = 0.0
        if fields[0] and quality > 0:
            ranked.append((-quality, position, fields[0].lower()))
    for _, _, pattern in sorted(ranked):
        for media in offered:
            major = media.split("/")[0]
            if pattern in (media, "*/*", f"{major}/*"):
                return media
    return None


def _not_acceptable(offered: Iterable[str]) -> Response:
    return error_response(
        406,
        ErrorCode.QUERY,
        f"not acceptable; this answer comes as {', '.join(offered)}",
    )


# --- result formats -------------------------------------------------------------


def _rdf(triples: Iterable[ox.Triple], media: str) -> bytes:
    out = io.BytesIO()
    ox.serialize(triples, out, format=_RDF_FORMATS[media])
    return out.getvalue()


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>oms-rdf</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:70em}
textarea{width:100%;height:8em;font-family:monospace}table{border-collapse:collapse;margin-top:1em}
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}</style></head>
<body><h1>oms-rdf</h1>
<form id="ask"><label for="query">SPARQL over the knowledge</label>
<textarea id="query">SELECT ?s ?p ?o WHERE { ?s ?p ?o } LIMIT 25</textarea>
<label>valid at <input id="valid_at" placeholder="2024-01-01 (default: now)"></label>
<label>as of <input id="as_of" placeholder="2024-01-01 (default: now)"></label>
<button type="submit">Run</button></form>
<p id="status" role="status"></p><table id="results"></table>
<script>
async function run() {
  const body = new URLSearchParams({query: document.getElementById("query").value});
  for (const name of ["valid_at", "as_of"]) {
    const value = document.getElementById(name).value.trim();
    if (value) body.append(name, value);
  }
  const status = document.getElementById("status"), table = document.getElementById("results");
  table.replaceChildren();
  const response = await fetch("sparql", {method: "POST", body,
    headers: {"Accept": "application/sparql-results+json"}});
  if (!response.ok) {
    const text = await response.text();
    try { const error = JSON.parse(text); status.textContent = error.code + ": " + error.message; }
    catch (_) { status.textContent = text; }
    return;
  }
  const data = await response.json();
  if ("boolean" in data) { status.textContent = String(data.boolean); return; }
  const vars = data.head.vars, head = table.insertRow();
  for (const name of vars) head.appendChild(document.createElement("th")).textContent = name;
  for (const binding of data.results.bindings) {
    const row = table.insertRow();
    for (const name of vars) row.insertCell().textContent = binding[name] ? binding[name].value : "";
  }
  status.textContent = data.results.bindings.length + " rows";
}
document.getElementById("ask").addEventListener("submit", (event) => { event.preventDefault(); run(); });
// A link can carry a query and a point in time (?query=...&valid_at=...): run it.
const given = new URLSearchParams(location.search);
for (const name of ["query", "valid_at", "as_of"]) {
  if (given.has(name)) document.getElementById(name).value = given.get(name);
}
if (given.has("query")) run();
</script></body></html>
"""
