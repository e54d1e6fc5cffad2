"""HTTP bodies through the real app (starlette's TestClient), a real store behind it.

The facts API (``POST /v1/facts``, ``PUT /v1/facts/{id}``, ``.../revise``,
``.../evidence``) and ``POST /sparql`` updates, with bodies made from the hostile
belief fields of :mod:`.beliefs`, from mutated JSON, and from SPARQL Update texts
that write into the reserved graphs, on grain nodes, or carry hostile terms.
The laws: never a 5xx; a 4xx has a JSON body with a code; a refusal wrote nothing;
an acceptance leaves every layer and reserved graph as the store's laws say.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from starlette.testclient import TestClient

import oms_rdf as oms
from oms_rdf.http.app import Token, create_app

from . import laws
from .beliefs import GENID, NIH, NS, RESERVED, TEXTS, fields_from_bytes, story
from .seeds import mutate

WRITER = {"Authorization": "Bearer all"}
SCOPED = {"Authorization": "Bearer shared"}
TOKENS = {"all": Token(write=True), "shared": Token(namespaces=("shared",), write=True)}

_SERVED: list[tuple[oms.GrainStore, TestClient]] = []


def served() -> tuple[oms.GrainStore, TestClient]:
    """The story behind the app; remade when it grows."""
    if _SERVED and len(_SERVED[0][0].core.backend) <= 800:
        return _SERVED[0]
    close()
    store = story()
    app = create_app(store, tokens=TOKENS, query_timeout=10, query_workers=1,
                     store_workers=1)  # fmt: skip
    client = TestClient(app, raise_server_exceptions=False)
    _SERVED[:] = [(store, client)]
    return _SERVED[0]


def close() -> None:
    for _store, client in _SERVED:
        client.close()
        for lane in client.app.state.lanes:  # type: ignore[attr-defined]
            lane.close(grace=1.0)
    _SERVED.clear()


def _json(value: Any) -> bytes:
    return json.dumps(value, default=lambda o: o.hex() if isinstance(o, bytes) else str(o),
                      ensure_ascii=False).encode("utf-8", "surrogatepass")  # fmt: skip


def _term(rng: random.Random) -> str:
    text = rng.choice([*RESERVED, GENID + "x", NIH, "http://example.org/a",
                       "https://w3id.org/oms-rdf/id/entity/shared/alice",
                       "https://w3id.org/oms-rdf/id/rel/works_at"])  # fmt: skip
    kind = rng.randrange(6)
    if kind == 0:
        return "_:b" + str(rng.randrange(3))
    if kind == 1:
        literal = rng.choice(TEXTS)[:100]
        escaped = literal.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        escaped = escaped.replace("\r", "\\r")
        return (
            '"'
            + escaped
            + '"'
            + rng.choice(("", "@en", "^^<http://www.w3.org/2001/XMLSchema#integer>"))
        )
    return f"<{text}>"


def update_text(rng: random.Random, store: oms.GrainStore) -> str:
    """A SPARQL Update that inserts or deletes hostile triples, maybe in a reserved graph."""
    ops = []
    quads = list(store.core.backend.quads())
    for _ in range(rng.randrange(1, 4)):
        verb = rng.choice(("INSERT DATA", "DELETE DATA", "DELETE WHERE"))
        if rng.random() < 0.4 and quads:
            q = rng.choice(quads)
            triple = f"{q.subject} {q.predicate} {q.object} ."
            graph = q.graph_name
            where = "" if isinstance(graph, type(laws.DEFAULT)) else str(graph)
        else:
            triple = f"{_term(rng)} {_term(rng)} {_term(rng)} ."
            where = rng.choice(("", "", f"<{NS}blobs>", f"<{NS}index>", f"<{NS}audit>",
                                f"<{NS}current>", "<http://example.org/g>"))  # fmt: skip
        body = f"GRAPH {where} {{ {triple} }}" if where else triple
        ops.append(f"{verb} {{ {body} }}")
    return " ;\n".join(ops)


def _current(store: oms.GrainStore) -> str:
    """A current belief to supersede, revise or weigh (a grain, when none is left)."""
    found = store.beliefs("alice") or store.beliefs("http://example.org/a")
    if found:
        return found[0].address
    return next(
        str(getattr(q.subject, "value", ""))
        for q in laws.snapshot(store).graph(laws.BLOBS)
    )[12:]


def request(data: bytes) -> None:
    """One hostile request, chosen and filled by ``data``."""
    store, client = served()
    rng = random.Random(data)
    route = rng.randrange(6)
    headers = rng.choice((WRITER, WRITER, SCOPED))
    fields = fields_from_bytes(data)
    body = _json(fields)
    if rng.random() < 0.2:
        body = mutate(body, rng)
    before = laws.snapshot(store)
    if route <= 1:
        method, url = "POST", "/v1/facts"
    elif route == 2:
        method, url = "PUT", f"/v1/facts/{_current(store)}"
        if rng.random() < 0.5:
            fields["$justification"] = rng.choice(TEXTS)[:200]
            body = _json(fields)
    elif route == 3:
        method, url = "POST", f"/v1/facts/{_current(store)}/revise"
        fields.pop("type", None)
        body = _json({"fields": fields, "force": rng.random() < 0.5,
                      "justification": rng.choice(TEXTS)[:100]})  # fmt: skip
    elif route == 4:
        method, url = "POST", f"/v1/facts/{_current(store)}/evidence"
        body = _json({"kind": rng.choice(("supporting", "refuting", "x", 1)),
                      "strength": rng.choice((0.9, 0.5, 1, 0, -1, 2, 1e308, "a")),
                      "note": rng.choice((None, *TEXTS[:20]))})  # fmt: skip
    else:
        method, url = "POST", "/sparql"
        body = update_text(rng, store).encode("utf-8", "surrogatepass")
        if rng.random() < 0.1:
            body = mutate(body, rng)
        headers = {**headers, "content-type": "application/sparql-update"}
    what = f"{method} {url} {body[:300]!r}"
    answer = client.request(method, url, content=body, headers=headers)
    assert answer.status_code < 500, f"{what}: {answer.status_code} {answer.text[:500]}"
    if answer.status_code >= 400:
        error = answer.json()
        assert isinstance(error, dict) and error.get("code"), (
            f"{what}: {answer.text[:300]}"
        )
        laws.refused(before, store, what)
        return
    try:
        laws.accepted(before, store, what)
    except BaseException:
        close()
        raise


TARGETS: dict[str, Callable[[bytes], None]] = {"http": request}
