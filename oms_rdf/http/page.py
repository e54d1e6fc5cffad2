"""The page at ``/``: a time-travel explorer of the store, for people.

A query editor (SPARQL highlighting, prefix completion, the parser's error marked
where it is), answers as a table or, for CONSTRUCT and DESCRIBE, as a graph, and a
download of either; valid-time and system-time pickers that run the query at that
point, and a timeline of the store's history that moves the point when dragged; a
subject's versions drawn on both time axes; what changed between two points; a
bearer token for a protected server, kept in the browser tab's session only.

The page is this HTML and the package's own script and style
(``oms_rdf/http/static``, served by :mod:`.explorer`): it loads nothing from
elsewhere, and its Content-Security-Policy lets it reach only this server.

A link can carry the query and the point (``/?query=...&valid_at=...&as_of=...``):
the page runs it when it opens; ``?subject=IRI`` opens that subject's timeline.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

__all__ = ["CSP", "PAGE", "page_route"]

# Only this server: no other site's script, style, font, image or connection.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data: blob:; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)


def page_route() -> Route:
    """Return the route of the page (``GET /``)."""

    async def page(request: Request) -> Response:
        return HTMLResponse(PAGE, headers={"content-security-policy": CSP})

    return Route("/", page, methods=["GET"])


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>oms-rdf explorer</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="explorer/static/explorer.css"></head>
<body data-state="loading">
<header><h1>oms-rdf</h1><span class="tagline">the knowledge at any point in time</span>
<form id="token-form" class="token"><label for="token">Bearer token</label>
<input id="token" type="password" autocomplete="off" placeholder="kept in this tab only">
<button type="submit">Use</button><button type="button" id="token-forget">Forget</button>
<span id="token-state"></span></form></header>

<section id="time" aria-label="The point in time">
<div class="pickers">
<label>valid at <input id="valid_at" type="datetime-local" step="0.001"></label>
<label>as of <input id="as_of" type="datetime-local" step="0.001"></label>
<span class="utc">UTC; empty is now</span>
<button type="button" id="now">Now</button>
<label>dragging the timeline moves <select id="drag-axis">
<option value="both">both times</option><option value="valid">valid time</option>
<option value="system">system time</option></select></label>
</div>
<svg id="timeline" role="slider" tabindex="0" aria-label="The store's history: the point in time"></svg>
<p class="hint">Drag on the timeline (or press its arrow keys) to move the point; drag with Shift to compare two points;
the wheel zooms, a double click shows it all. Marks on top are imports, transactions and updates.</p>
</section>

<form id="ask">
<label for="query">SPARQL over the knowledge</label>
<div id="editor" class="editor"><pre id="highlight" aria-hidden="true"></pre>
<textarea id="query" spellcheck="false" autocapitalize="off" autocomplete="off">SELECT ?s ?p ?o WHERE { ?s ?p ?o } LIMIT 25</textarea>
<ul id="complete" role="listbox" hidden></ul></div>
<div class="actions"><button type="submit" id="run">Run</button>
<span class="hint">Ctrl+Enter runs · Tab completes a prefix</span>
<select id="download-format" aria-label="download format" hidden></select>
<button type="button" id="download" disabled>Download</button></div>
</form>
<p id="status" role="status"></p>

<nav class="tabs" role="tablist">
<button type="button" role="tab" data-view="results" aria-selected="true">Results</button>
<button type="button" role="tab" data-view="graph">Graph</button>
<button type="button" role="tab" data-view="subject">Subject</button>
<button type="button" role="tab" data-view="changes">Changes</button>
</nav>
<section id="view-results" class="view"><table id="results"></table></section>
<section id="view-graph" class="view" hidden><p class="note" id="graph-note">CONSTRUCT or DESCRIBE draws its triples here.</p>
<svg id="graph" role="img" aria-label="The answer's triples"></svg></section>
<section id="view-subject" class="view" hidden>
<form id="subject-form"><label>subject <input id="subject" size="50"
placeholder="an IRI, or a belief's subject text"></label><button type="submit">Show its timeline</button></form>
<div id="subject-charts"></div></section>
<section id="view-changes" class="view" hidden>
<form id="changes-form"><label>since <input id="since" type="datetime-local" step="0.001" required></label>
<label>until <input id="until" type="datetime-local" step="0.001"></label>
<label>axis <select id="axis"><option value="both">both (as believed then)</option>
<option value="valid">valid (how the world changed)</option>
<option value="system">system (what the store learnt)</option></select></label>
<button type="submit">Compare</button></form>
<div id="changes"></div></section>
<script src="explorer/static/explorer.js"></script>
</body></html>
"""
