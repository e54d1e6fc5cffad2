"""The page at ``/``: a form to run a SPARQL query at a point in time, for people.

A link can carry the query and the point (``/?query=...&valid_at=...``): the page
runs it when it opens.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

__all__ = ["PAGE", "page_route"]


def page_route() -> Route:
    """Return the route of the page (``GET /``)."""

    async def page(request: Request) -> Response:
        return HTMLResponse(PAGE)

    return Route("/", page, methods=["GET"])


PAGE = """<!doctype html>
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
