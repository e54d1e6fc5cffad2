"""``oms-rdf serve``: the store over HTTP, for every client that is not this process.

- ``/sparql``: the SPARQL 1.1 Protocol (GET, POST form, POST
  ``application/sparql-query``) over the dataset ``store.query`` uses, with
  ``default-graph-uri``/``named-graph-uri`` and the extension parameters
  ``valid_at`` and ``as_of`` (ISO 8601 or epoch ms) for time travel. SELECT and ASK
  answer in SPARQL JSON, XML, CSV or TSV; CONSTRUCT and DESCRIBE in Turtle,
  N-Triples or JSON-LD, by content negotiation. A malformed query is a 400 with
  the parser's message; a query over its time limit a 503.
- ``/store``: the Graph Store Protocol, read-only (``?default``, ``?graph=IRI``),
  with ``valid_at``/``as_of``: the knowledge with the exact terms the grains record.
- ``/v1/facts``: the facts API (:mod:`oms_rdf.facts`), described at ``/openapi.json``
  and, for people, ``/docs``.
- ``/``: a small page to run a query at a point in time.

- SPARQL Update at ``/sparql`` (``update=``, or a body of type
  ``application/sparql-update``) as belief operations (:mod:`oms_rdf.io.update`):
  ``INSERT DATA`` adopts, ``DELETE DATA`` retracts through the policies (a refusal is
  a 403 naming the spec code, and the store is unchanged), any other form is a 400.

Bearer tokens (:func:`load_tokens`) are scoped to namespaces and to reading or
writing; a token sees only the knowledge of its namespaces, through every route
(``GRAPH`` and ``DESCRIBE`` included, since the dataset itself is narrowed). Without
tokens the server is read-only and open to whoever reaches it (it binds loopback
by default). Starlette and uvicorn come with the ``[server]`` extra.

>>> from oms_rdf import GrainStore
>>> app = create_app(GrainStore())
>>> sorted({r.path for r in app.routes})[:5]
['/', '/docs', '/openapi.json', '/sparql', '/store']
"""

from __future__ import annotations

import hmac
import io
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import anyio
import pyoxigraph as ox
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from .errors import OmsError, PolicyError, QueryError, SchemaError
from .facts import fact_routes
from .results import SOLUTION_TYPES, write_boolean, write_solutions
from .store import GrainStore, Solutions
from .times import to_millis

__all__ = [
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
) -> Starlette:
    """Return the ASGI app serving ``store`` (see the module docstring)."""

    def authorize(request: Request) -> Token | Response:
        if tokens is None:
            return _OPEN
        header = request.headers.get("authorization", "")
        given = header[7:].strip() if header.lower().startswith("bearer ") else ""
        for secret, token in tokens.items():
            if given and hmac.compare_digest(given.encode(), secret.encode()):
                return token
        return PlainTextResponse(
            "a bearer token is needed", status_code=401,
            headers={"www-authenticate": "Bearer"},
        )  # fmt: skip

    async def sparql(request: Request) -> Response:
        token = authorize(request)
        if isinstance(token, Response):
            return token
        params = await _params(request)
        if "update" in params:
            return await _update(store, token, params, query_timeout)
        texts = params.get("query", [])
        if any(_FEDERATED.search(text) for text in texts):
            return PlainTextResponse(
                "SERVICE is refused: this endpoint does not send requests elsewhere",
                status_code=400,
            )
        if len(texts) != 1:
            return PlainTextResponse(
                "give exactly one query (parameter `query`, or a body of type "
                "application/sparql-query)",
                status_code=400,
            )
        # rdflib's SPARQLStore names the default graph urn:x-rdflib:default.
        default_uris = [
            u for u in params.get("default-graph-uri", []) if u != _RDFLIB_DEFAULT
        ] or None
        named_uris = params.get("named-graph-uri") or None
        accept = request.headers.get("accept", "*/*")

        def answer() -> tuple[bytes, str]:
            valid_at, as_of = _point(params)
            result = store.query(texts[0], valid_at=valid_at, as_of=as_of,
                                 namespace=token.namespaces,
                                 default_graph_uris=default_uris,
                                 named_graph_uris=named_uris)  # fmt: skip
            return serialize_results(result, accept)

        return await _run(answer, query_timeout)

    async def graph_store(request: Request) -> Response:
        token = authorize(request)
        if isinstance(token, Response):
            return token
        params = {k: request.query_params.getlist(k) for k in request.query_params}
        if ("graph" in params) == ("default" in params):
            return PlainTextResponse(
                "give either ?default or ?graph=IRI", status_code=400
            )
        accept = request.headers.get("accept", "*/*")
        media = _negotiate(accept, RESULT_TYPES["graph"])
        if media is None:
            return _not_acceptable(RESULT_TYPES["graph"])

        def answer() -> tuple[bytes, str]:
            valid_at, as_of = _point(params)
            snapshot = store.snapshot(
                valid_at=valid_at, as_of=as_of, namespace=token.namespaces
            )
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

        return await _run(answer, query_timeout)

    async def page(request: Request) -> Response:
        return HTMLResponse(_PAGE)

    return Starlette(
        routes=[
            Route("/sparql", sparql, methods=["GET", "POST"]),
            Route("/store", graph_store, methods=["GET", "HEAD"]),
            Route("/", page, methods=["GET"]),
            *fact_routes(store, authorize),
        ]
    )


async def _update(
    store: GrainStore, token: Token, params: dict[str, list[str]], timeout: float
) -> Response:
    """SPARQL Update as belief operations, in the token's namespace."""
    if not token.write:
        why = "this token may only read" if token is not _OPEN else (
            "this server holds no write tokens (start it with --token-file)")  # fmt: skip
        return PlainTextResponse(why, status_code=403)
    texts = params["update"]
    asked = params.get("namespace", [None])[0]
    scope = token.namespaces
    if scope is not None and asked is None and len(scope) == 1:
        asked = scope[0]
    if scope is not None and asked not in scope:
        return PlainTextResponse(
            f"say which of this token's namespaces to write: ?namespace= one of {list(scope)}",
            status_code=403 if asked is not None else 400,
        )
    if len(texts) != 1:
        return PlainTextResponse("give exactly one update", status_code=400)

    def apply() -> tuple[bytes, str]:
        report = store.update(texts[0], namespace=asked)
        body = {"added": report.added, "believed": report.believed,
                "retracted": report.retracted, "not_believed": report.not_believed}  # fmt: skip
        return json.dumps(body).encode(), "application/json"

    return await _run(apply, timeout)


def serve(
    store: GrainStore,
    *,
    host: str = "127.0.0.1",
    port: int = 7878,
    tokens: Mapping[str, Token] | None = None,
    query_timeout: float = 30.0,
) -> None:
    """Serve ``store`` until SIGINT or SIGTERM, then flush it and return.

    uvicorn drains the requests in flight, then raises the signal again with the
    handlers it found; ours turn that into a clean return.
    """
    import signal

    import uvicorn

    def stop(signum: int, frame: object) -> None:
        raise _SignalledError

    previous = {
        sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        uvicorn.run(
            create_app(store, tokens=tokens, query_timeout=query_timeout),
            host=host,
            port=port,
            log_level="warning",
        )
    except _SignalledError:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        store.flush()


class _SignalledError(Exception):
    """SIGINT or SIGTERM, after uvicorn's graceful shutdown."""


def serialize_results(result: Any, accept: str) -> tuple[bytes, str]:
    """Return a query result in the media type ``accept`` prefers, and that type.

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
    if kind == "graph":
        return _rdf(result, media), media
    if isinstance(result, bool):
        return write_boolean(result, media), media
    names = [v.value for v in result.variables]
    return write_solutions(names, result, media), media


# --- request handling -----------------------------------------------------------


async def _params(request: Request) -> dict[str, list[str]]:
    params = {k: request.query_params.getlist(k) for k in request.query_params}
    if request.method == "POST":
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        if kind == _QUERY_FORM:  # parsed here: no multipart library for a form
            body = (await request.body()).decode()
            for key, values in parse_qs(body, keep_blank_values=True).items():
                params.setdefault(key, []).extend(values)
        elif kind in ("application/sparql-query", "application/sparql-update"):
            key = "query" if kind.endswith("query") else "update"
            params.setdefault(key, []).append((await request.body()).decode())
    return params


def _point(params: dict[str, list[str]]) -> tuple[int | None, int | None]:
    """The bi-temporal point asked for (``valid_at``, ``as_of``), in epoch ms."""
    valid = (
        to_millis(params["valid_at"][0], "valid_at") if "valid_at" in params else None
    )
    known = to_millis(params["as_of"][0], "as_of") if "as_of" in params else None
    return valid, known


async def _run(answer: Callable[[], tuple[bytes, str]], timeout: float) -> Response:
    """Evaluate off the event loop, within the time limit; map errors to statuses."""
    try:
        with anyio.fail_after(timeout):
            body, media = await anyio.to_thread.run_sync(answer, abandon_on_cancel=True)
    except TimeoutError:
        return PlainTextResponse(
            f"the query ran over the server's limit of {timeout:g} s", status_code=503
        )
    except LookupError as exc:
        return PlainTextResponse(str(exc), status_code=404)
    except PolicyError as exc:
        return PlainTextResponse(str(exc), status_code=403)  # names the spec code
    except OmsError as exc:
        status = 400 if isinstance(exc, ValueError) else 500
        return PlainTextResponse(str(exc), status_code=status)
    return Response(body, media_type=media)


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
    return PlainTextResponse(
        f"not acceptable; this answer comes as {', '.join(offered)}", status_code=406
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
  if (!response.ok) { status.textContent = await response.text(); return; }
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
