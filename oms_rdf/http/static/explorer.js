// The oms-rdf explorer: the page at / (oms_rdf/http/page.py), this server only.
// Editor (highlighting, prefix completion, error marks), answers (table, graph,
// download), time (pickers, the history timeline), a subject's bitemporal
// timeline, the changes between two points, and the bearer token of the session.
"use strict";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const TOKEN_KEY = "oms-rdf.token";
const state = {
  prefixes: {}, declared: {}, history: null, last: null, busy: 0, renders: 0,
  given: {},  // a point's time as the page's address gave it, until a picker moves
};

// --- the session's token and every request --------------------------------------

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

function showToken(needed) {
  $("token-state").textContent = token() ? "token set for this tab" : "no token";
  $("token-form").classList.toggle("needed", Boolean(needed) && !token());
}

async function call(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  if (token()) headers["Authorization"] = "Bearer " + token();
  state.busy += 1;
  document.body.dataset.state = "busy";
  try {
    const response = await fetch(path, Object.assign({}, options, {headers}));
    if (response.status === 401) {
      showToken(true);
      $("token-form").classList.add("needed");
    }
    return response;
  } finally {
    state.busy -= 1;
    if (state.busy === 0) document.body.dataset.state = "idle";
  }
}

async function failure(response) {
  const text = await response.text();
  try {
    const body = JSON.parse(text);
    return {code: body.code || String(response.status), message: String(body.message || "")};
  } catch (_) {
    return {code: String(response.status), message: text};
  }
}

// --- one-line errors, with the parser's position -----------------------------------

function oneLine(message) {
  // The parser lists character classes over several lines: keep what a person reads.
  let text = message.replace(/\[(?:[^\[\]"']|"[^"]*"|'[^']*')*\]/g, "").replace(/\s+/g, " ");
  text = text.replace(/(, )+/g, ", ").replace(/, ?$/, "").replace(/one of ,/, "one of").trim();
  return text.length > 240 ? text.slice(0, 239) + "…" : text;
}

function position(message) {
  const found = /\b(?:at|line)\s+(\d+):(\d+)/.exec(message) || /\b(\d+):(\d+)\b/.exec(message);
  return found ? {line: Number(found[1]), column: Number(found[2])} : null;
}

function say(text, error) {
  const status = $("status");
  status.textContent = text;
  status.title = text;
  status.classList.toggle("error", Boolean(error));
}

function sayError(problem) {
  const where = position(problem.message);
  let text = problem.code + ": " + oneLine(problem.message);
  if (problem.code === "ERR_INVALIDATION_DENIED" && /token/.test(problem.message)) {
    text += " Enter a token above.";
  }
  say(text, true);
  return where;
}

// --- the editor: highlighting, completion, error marks --------------------------

const KEYWORDS = new Set(("SELECT CONSTRUCT DESCRIBE ASK WHERE PREFIX BASE FILTER OPTIONAL UNION " +
  "GRAPH LIMIT OFFSET ORDER BY ASC DESC DISTINCT REDUCED GROUP HAVING VALUES BIND AS FROM NAMED " +
  "SERVICE SILENT MINUS NOT EXISTS IN UNDEF INSERT DELETE DATA WITH USING a true false").split(" "));
const FUNCTIONS = new Set(("STR LANG LANGMATCHES DATATYPE BOUND IRI URI BNODE RAND ABS CEIL FLOOR " +
  "ROUND CONCAT STRLEN UCASE LCASE ENCODE_FOR_URI CONTAINS STRSTARTS STRENDS STRBEFORE STRAFTER " +
  "YEAR MONTH DAY HOURS MINUTES SECONDS TIMEZONE TZ NOW UUID STRUUID MD5 SHA1 SHA256 SHA512 " +
  "COALESCE IF STRLANG STRDT SAMETERM ISIRI ISURI ISBLANK ISLITERAL ISNUMERIC REGEX SUBSTR REPLACE " +
  "COUNT SUM MIN MAX AVG SAMPLE GROUP_CONCAT SEPARATOR").split(" "));
const TOKEN = new RegExp([
  "(#[^\\n]*)",                                              // 1 comment
  "(<[^<>\"{}|^`\\\\\\s]*>)",                               // 2 IRI
  "(\"\"\"[\\s\\S]*?(?:\"\"\"|$)|'''[\\s\\S]*?(?:'''|$)|\"(?:[^\"\\\\\\n]|\\\\.)*\"?|'(?:[^'\\\\\\n]|\\\\.)*'?)", // 3 string
  "([?$][A-Za-z0-9_\\u00C0-\\uFFFF]+)",                     // 4 variable
  "((?:[A-Za-z][\\w.-]*)?:[\\w.%-]*|_:[\\w.-]+)",           // 5 prefixed name, blank node
  "([+-]?\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?)",              // 6 number
  "([A-Za-z_][A-Za-z0-9_]*)",                               // 7 word
  "(\\s+)",                                                 // 8 space
  "([\\s\\S])",                                             // 9 anything else
].join("|"), "gy");

function tokens(text) {
  const found = [];
  TOKEN.lastIndex = 0;
  let match;
  while (TOKEN.lastIndex < text.length && (match = TOKEN.exec(text)) !== null) {
    let kind = "punct";
    if (match[1]) kind = "comment";
    else if (match[2]) kind = "iri";
    else if (match[3]) kind = "str";
    else if (match[4]) kind = "var";
    else if (match[5]) kind = "pname";
    else if (match[6]) kind = "num";
    else if (match[7]) {
      const word = match[7];
      kind = KEYWORDS.has(word.toUpperCase()) || word === "a" ? "kw"
        : FUNCTIONS.has(word.toUpperCase()) ? "fn" : "word";
    } else if (match[8]) kind = "space";
    found.push({kind, start: match.index, text: match[0]});
  }
  return found;
}

function escapeHtml(text) {
  return text.replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
}

function offsetOf(text, where) {
  if (!where) return -1;
  const lines = text.split("\n");
  const line = Math.min(Math.max(where.line, 1), lines.length);
  let offset = 0;
  for (let i = 0; i < line - 1; i += 1) offset += lines[i].length + 1;
  return offset + Math.min(Math.max(where.column - 1, 0), lines[line - 1].length);
}

function highlight() {
  const text = $("query").value;
  const error = state.errorAt === undefined ? -1 : state.errorAt;
  let html = "", marked = error < 0;
  for (const token of tokens(text)) {
    const inside = !marked && error >= token.start && error < token.start + token.text.length;
    let cls = token.kind === "space" || token.kind === "word" ? "" : "tk-" + token.kind;
    if (inside && token.kind !== "space") { cls += " tk-err"; marked = true; }
    const body = escapeHtml(token.text);
    html += cls ? `<span class="${cls.trim()}">${body}</span>` : body;
    if (inside && token.kind === "space") {
      html = html.slice(0, html.length - body.length) + '<span class="tk-err tk-err-end"></span>' + body;
      marked = true;
    }
  }
  if (!marked) html += '<span class="tk-err tk-err-end"></span>';
  $("highlight").innerHTML = html + "\n";
  syncScroll();
}

function syncScroll() {
  $("highlight").scrollTop = $("query").scrollTop;
  $("highlight").scrollLeft = $("query").scrollLeft;
}

function markError(where) {
  const text = $("query").value;
  state.errorAt = where ? offsetOf(text, where) : undefined;
  highlight();
  const mark = document.querySelector("#highlight .tk-err");
  if (mark) mark.title = `line ${where.line}, column ${where.column}`;
}

function queryPrefixes(text) {
  const own = {};
  const pattern = /PREFIX\s+([A-Za-z][\w.-]*)?:\s*<([^>]*)>/gi;
  let match;
  while ((match = pattern.exec(text)) !== null) own[match[1] || ""] = match[2];
  return own;
}

function completions(word, declaring) {
  const all = Object.assign({}, state.prefixes, queryPrefixes($("query").value));
  return Object.keys(all).filter((name) => name.startsWith(word) && (declaring || name !== word))
    .sort().slice(0, 12).map((name) => ({name, iri: all[name]}));
}

function caretWord() {
  const area = $("query");
  const before = area.value.slice(0, area.selectionStart);
  const match = /(?:^|[\s({,;.\/^|!])([A-Za-z][\w-]*)$/.exec(before);
  if (!match) return null;
  const declaring = /PREFIX\s+$/i.test(before.slice(0, before.length - match[1].length));
  return {word: match[1], start: area.selectionStart - match[1].length, declaring};
}

function openCompletion() {
  const list = $("complete");
  const at = caretWord();
  const options = at ? completions(at.word, at.declaring) : [];
  if (!options.length) { closeCompletion(); return; }
  state.completion = {at, options, chosen: 0};
  list.replaceChildren(...options.map((option, i) => {
    const item = document.createElement("li");
    item.setAttribute("role", "option");
    item.setAttribute("aria-selected", String(i === 0));
    item.textContent = option.name + ":";
    const iri = item.appendChild(document.createElement("span"));
    iri.textContent = option.iri;
    item.addEventListener("mousedown", (event) => { event.preventDefault(); accept(i); });
    return item;
  }));
  const area = $("query"), lines = area.value.slice(0, at.start).split("\n");
  const width = charWidth();
  list.style.left = Math.min(8 + lines[lines.length - 1].length * width, area.clientWidth - 200) + "px";
  list.style.top = (8 + lines.length * 19.5 - area.scrollTop) + "px";
  list.hidden = false;
}

function closeCompletion() { $("complete").hidden = true; state.completion = null; }

function charWidth() {
  if (!state.charWidth) {
    const probe = document.createElement("span");
    probe.textContent = "0".repeat(40);
    $("highlight").appendChild(probe);
    state.charWidth = probe.getBoundingClientRect().width / 40 || 7.8;
    probe.remove();
  }
  return state.charWidth;
}

function choose(step) {
  const c = state.completion;
  c.chosen = (c.chosen + step + c.options.length) % c.options.length;
  [...$("complete").children].forEach((item, i) => item.setAttribute("aria-selected", String(i === c.chosen)));
}

function accept(index) {
  const {at, options} = state.completion;
  const option = options[index];
  const area = $("query");
  let text = area.value, caret;
  const insert = at.declaring ? `${option.name}: <${option.iri}>` : option.name + ":";
  text = text.slice(0, at.start) + insert + text.slice(area.selectionStart);
  caret = at.start + insert.length;
  const own = queryPrefixes(text);
  if (!at.declaring && !(option.name in state.declared) && !(option.name in own)) {
    const line = `PREFIX ${option.name}: <${option.iri}>\n`;
    const head = /^(?:\s*(?:PREFIX|BASE)[^\n]*\n)*/i.exec(text)[0].length;
    text = text.slice(0, head) + line + text.slice(head);
    caret += line.length;
  }
  area.value = text;
  area.setSelectionRange(caret, caret);
  closeCompletion();
  edited();
}

function edited() {
  state.errorAt = undefined;
  highlight();
}

function editorKeys(event) {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault(); closeCompletion(); run(); return;
  }
  if (!state.completion) {
    if (event.key === "Tab" && !event.shiftKey) {
      openCompletion();
      if (state.completion) { event.preventDefault(); if (state.completion.options.length === 1) accept(0); }
    }
    return;
  }
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    event.preventDefault(); choose(event.key === "ArrowDown" ? 1 : -1);
  } else if (event.key === "Enter" || event.key === "Tab") {
    event.preventDefault(); accept(state.completion.chosen);
  } else if (event.key === "Escape") {
    event.preventDefault(); closeCompletion();
  }
}

// --- terms: IRIs shortened, blank nodes numbered --------------------------------

function allPrefixes() {
  return Object.assign({}, state.prefixes, queryPrefixes($("query").value));
}

function shorten(iri, prefixes) {
  let best = null;
  for (const [name, namespace] of Object.entries(prefixes)) {
    if (namespace && iri.startsWith(namespace) && (!best || namespace.length > best[1].length)) {
      const local = iri.slice(namespace.length);
      if (/^([A-Za-z0-9_]([\w.-]*[\w-])?)?$/.test(local)) best = [name, namespace];
    }
  }
  return best ? best[0] + ":" + iri.slice(best[1].length) : iri;
}

function blankNames() {
  const names = new Map();
  return (label) => {
    if (!names.has(label)) names.set(label, "_:b" + (names.size + 1));
    return names.get(label);
  };
}

const XSD = "http://www.w3.org/2001/XMLSchema#";

// A belief's field as text: an IRI shortened, a blank node's label numbered.
function fieldText(value, prefixes, blank) {
  const text = String(value);
  return text.startsWith("_:") ? blank(text.slice(2)) : shorten(text, prefixes);
}

function termCell(cell, term, prefixes, blank) {
  if (!term) return;
  if (term.type === "uri") {
    cell.className = "iri";
    cell.title = term.value;
    cell.textContent = shorten(term.value, prefixes);
    cell.dataset.iri = term.value;
  } else if (term.type === "bnode") {
    cell.className = "bnode";
    cell.textContent = blank(term.value);
  } else if (term.type === "triple") {
    cell.textContent = "<< " + ["subject", "predicate", "object"].map((k) => {
      const part = term.value[k];
      return part.type === "uri" ? shorten(part.value, prefixes) : part.type === "bnode" ? blank(part.value) : JSON.stringify(part.value);
    }).join(" ") + " >>";
  } else {
    cell.textContent = term.value;
    const suffix = term["xml:lang"] ? "@" + term["xml:lang"]
      : term.datatype && term.datatype !== XSD + "string" ? "^^" + shorten(term.datatype, prefixes) : "";
    if (suffix) {
      const small = cell.appendChild(document.createElement("span"));
      small.className = "suffix";
      small.textContent = suffix;
    }
  }
}

// --- running a query at the point ----------------------------------------------

function pickerValue(id) {
  const value = $(id).value;
  return value ? value + (value.length === 16 ? ":00Z" : "Z") : "";
}

function setPicker(id, ms) {
  delete state.given[id];
  if (ms === null || ms === undefined) {
    $(id).value = "";
    return;
  }
  const iso = new Date(ms).toISOString();  // milliseconds kept when there are some
  $(id).value = iso.slice(0, ms % 1000 ? 23 : 19);
}

function parseTime(text) {
  const trimmed = String(text).trim();
  if (!trimmed) return null;
  if (/^-?\d{11,}$/.test(trimmed)) return Number(trimmed);
  const iso = /^\d{4}-\d{2}-\d{2}$/.test(trimmed) ? trimmed + "T00:00:00Z"
    : /[zZ]|[+-]\d{2}:?\d{2}$/.test(trimmed) ? trimmed : trimmed + "Z";
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? null : ms;
}

function point() {
  // A time the address gave goes to the server as it was written, read by the
  // server's rule (the picker shows it as the browser reads it, to the second).
  const chosen = {};
  for (const name of ["valid_at", "as_of"]) {
    const value = state.given[name] ?? pickerValue(name);
    if (value) chosen[name] = value;
  }
  return chosen;
}

function form(text) {
  const bare = text.replace(/#[^\n]*/g, " ").replace(/<[^>\s]*>/g, " <> ");
  const found = /\b(SELECT|ASK|CONSTRUCT|DESCRIBE)\b/i.exec(bare);
  return found ? found[1].toUpperCase() : "SELECT";
}

const FORMATS = {
  table: [["application/sparql-results+json", "SPARQL JSON", "srj"], ["text/csv", "CSV", "csv"],
    ["text/tab-separated-values", "TSV", "tsv"], ["application/sparql-results+xml", "SPARQL XML", "srx"]],
  graph: [["text/turtle", "Turtle", "ttl"], ["application/n-triples", "N-Triples", "nt"],
    ["application/ld+json", "JSON-LD", "jsonld"]],
};

function ask(query, accept) {
  const body = new URLSearchParams(Object.assign({query}, point()));
  return call("sparql", {method: "POST", body, headers: {"Accept": accept}});
}

async function run() {
  try {
    await runQuery();
  } finally {
    state.renders += 1;
    document.body.dataset.renders = String(state.renders);
  }
}

async function runQuery() {
  const query = $("query").value;
  const kind = form(query);
  const graph = kind === "CONSTRUCT" || kind === "DESCRIBE";
  const accept = graph ? "application/n-triples" : "application/sparql-results+json";
  closeCompletion();
  remember();
  const started = performance.now();
  const response = await ask(query, accept);
  if (!response.ok) {
    markError(sayError(await failure(response)));
    return;
  }
  markError(null);
  state.last = {query, graph};
  offerDownloads(graph ? "graph" : "table");
  const ms = Math.round(performance.now() - started);
  const at = describePoint();
  if (graph) {
    const triples = parseNTriples(await response.text());
    showTriples(triples);
    say(`${triples.length} triples · ${ms} ms · ${at}`);
  } else {
    const data = await response.json();
    if ("boolean" in data) {
      $("results").replaceChildren();
      say(`${data.boolean} · ${ms} ms · ${at}`);
    } else {
      showTable(data);
      say(`${data.results.bindings.length} rows · ${ms} ms · ${at}`);
    }
    showView("results");
  }
  drawTimeline();
}

function describePoint() {
  const chosen = point();
  return `valid at ${chosen.valid_at || "now"} · as of ${chosen.as_of || "now"}`;
}

function remember() {
  const params = new URLSearchParams({query: $("query").value});
  for (const [name, value] of Object.entries(point())) params.set(name, value);
  history.replaceState(null, "", "?" + params.toString());
}

function showTable(data) {
  const table = $("results"), prefixes = allPrefixes(), blank = blankNames();
  table.replaceChildren();
  const vars = data.head.vars, head = table.createTHead().insertRow();
  for (const name of vars) head.appendChild(document.createElement("th")).textContent = "?" + name;
  const body = table.createTBody();
  for (const binding of data.results.bindings) {
    const row = body.insertRow();
    for (const name of vars) termCell(row.insertCell(), binding[name], prefixes, blank);
  }
}

// --- CONSTRUCT and DESCRIBE: N-Triples, as a table and a graph --------------------

const NT_TERM = /\s*(<[^>]*>|_:[^\s.]+|"(?:[^"\\]|\\.)*"(?:@[A-Za-z0-9-]+|\^\^<[^>]*>)?)/y;

const NT_ESCAPES = {t: "\t", b: "\b", n: "\n", r: "\r", f: "\f", '"': '"', "'": "'", "\\": "\\"};

function unescapeNt(text) {
  return text.replace(/\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)/g, (whole, escape) =>
    escape.length > 1 ? String.fromCodePoint(parseInt(escape.slice(1), 16)) : (NT_ESCAPES[escape] ?? escape));
}

function ntTerm(text) {
  if (text[0] === "<") return {type: "uri", value: unescapeNt(text.slice(1, -1))};
  if (text.startsWith("_:")) return {type: "bnode", value: text.slice(2)};
  const end = text.lastIndexOf('"');
  const term = {type: "literal", value: unescapeNt(text.slice(1, end))};
  const rest = text.slice(end + 1);
  if (rest.startsWith("@")) term["xml:lang"] = rest.slice(1);
  else if (rest.startsWith("^^")) term.datatype = rest.slice(3, -1);
  return term;
}

function parseNTriples(text) {
  const triples = [];
  for (const line of text.split("\n")) {
    if (!line.trim() || line.trim().startsWith("#")) continue;
    NT_TERM.lastIndex = 0;
    const parts = [];
    for (let i = 0; i < 3; i += 1) {
      const match = NT_TERM.exec(line);
      if (!match) break;
      parts.push(ntTerm(match[1]));
    }
    if (parts.length === 3) triples.push(parts);
  }
  return triples;
}

function showTriples(triples) {
  showTable({head: {vars: ["subject", "predicate", "object"]}, results: {bindings:
    triples.map(([subject, predicate, object]) => ({subject, predicate, object}))}});
  drawGraph(triples);
  showView("graph");
}

function svg(name, attributes = {}, parent = null) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  if (parent) parent.appendChild(element);
  return element;
}

function label(parent, x, y, text, attributes = {}) {
  const element = svg("text", Object.assign({x, y}, attributes), parent);
  element.textContent = text;
  return element;
}

const MAX_GRAPH = 200;

function graphNodes(triples, prefixes, blank) {
  const nodes = new Map(), edges = [];
  const node = (term, key) => {
    if (!nodes.has(key)) {
      const text = term.type === "uri" ? shorten(term.value, prefixes)
        : term.type === "bnode" ? blank(term.value) : JSON.stringify(term.value);
      nodes.set(key, {key, term, text: text.length > 32 ? text.slice(0, 31) + "…" : text,
        x: Math.random(), y: Math.random(), dx: 0, dy: 0});
    }
    return nodes.get(key);
  };
  triples.slice(0, MAX_GRAPH).forEach(([s, p, o], i) => {
    const from = node(s, s.type + ":" + s.value);
    const to = node(o, o.type === "literal" ? "lit:" + i : o.type + ":" + o.value);
    edges.push({from, to, text: shorten(p.value, prefixes)});
  });
  return {nodes: [...nodes.values()], edges};
}

function layout(nodes, edges, width, height) {
  // A small force layout: nodes repel, edges pull, everything drifts to the middle.
  const k = Math.sqrt((width * height) / Math.max(nodes.length, 1)) * 0.75;
  nodes.forEach((n) => { n.x *= width; n.y *= height; });
  for (let step = 0, heat = width / 8; step < 260; step += 1, heat *= 0.985) {
    for (const a of nodes) {
      a.dx = (width / 2 - a.x) * 0.01; a.dy = (height / 2 - a.y) * 0.01;
      for (const b of nodes) {
        if (a === b) continue;
        const x = a.x - b.x, y = a.y - b.y, d2 = Math.max(x * x + y * y, 1);
        a.dx += (x * k * k) / d2 / 8; a.dy += (y * k * k) / d2 / 8;
      }
    }
    for (const {from, to} of edges) {
      const x = to.x - from.x, y = to.y - from.y, d = Math.max(Math.hypot(x, y), 1), f = (d * d) / k / d / 4;
      from.dx += x * f; from.dy += y * f; to.dx -= x * f; to.dy -= y * f;
    }
    for (const n of nodes) {
      const d = Math.max(Math.hypot(n.dx, n.dy), 1e-9), move = Math.min(d, heat);
      n.x = Math.min(width - 60, Math.max(60, n.x + (n.dx / d) * move));
      n.y = Math.min(height - 20, Math.max(20, n.y + (n.dy / d) * move));
    }
  }
}

function drawGraph(triples) {
  const area = $("graph");
  area.replaceChildren();
  const width = area.clientWidth || 900, height = area.clientHeight || 560;
  area.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const {nodes, edges} = graphNodes(triples, allPrefixes(), blankNames());
  $("graph-note").textContent = triples.length > MAX_GRAPH
    ? `The first ${MAX_GRAPH} of ${triples.length} triples; the table and the download have them all.`
    : `${triples.length} triples, ${nodes.length} nodes. Click an IRI for its timeline.`;
  layout(nodes, edges, width, height);
  const defs = svg("defs", {}, area);
  const marker = svg("marker", {id: "arrow", viewBox: "0 0 10 10", refX: "18", refY: "5",
    markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse"}, defs);
  svg("path", {d: "M 0 0 L 10 5 L 0 10 z", fill: "#8a939c"}, marker);
  for (const edge of edges) {
    svg("line", {x1: edge.from.x, y1: edge.from.y, x2: edge.to.x, y2: edge.to.y, "marker-end": "url(#arrow)"}, area);
    label(area, (edge.from.x + edge.to.x) / 2, (edge.from.y + edge.to.y) / 2 - 3, edge.text,
      {"class": "edge-label", "text-anchor": "middle"});
  }
  for (const node of nodes) {
    const group = svg("g", {"class": "node", transform: `translate(${node.x},${node.y})`}, area);
    if (node.term.type === "literal") {
      const w = node.text.length * 6.2 + 10;
      svg("rect", {x: -w / 2, y: -9, width: w, height: 18, rx: 3, "class": "node-literal"}, group);
      label(group, 0, 4, node.text, {"text-anchor": "middle"});
    } else {
      const circle = svg("circle", {r: 8, "class": node.term.type === "uri" ? "node-iri" : "node-bnode"}, group);
      label(group, 11, 4, node.text);
      if (node.term.type === "uri") {
        circle.addEventListener("click", () => openSubject(node.term.value));
        svg("title", {}, circle).textContent = node.term.value;
      }
    }
  }
}

// --- downloads ------------------------------------------------------------------

function offerDownloads(kind) {
  const select = $("download-format");
  select.replaceChildren(...FORMATS[kind].map(([type, name, suffix]) => {
    const option = document.createElement("option");
    option.value = type; option.textContent = name; option.dataset.suffix = suffix;
    return option;
  }));
  select.hidden = false;
  $("download").disabled = false;
}

async function download() {
  if (!state.last) return;
  const select = $("download-format");
  const response = await ask(state.last.query, select.value);
  if (!response.ok) { sayError(await failure(response)); return; }
  const blob = await response.blob();
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = "answer." + select.selectedOptions[0].dataset.suffix;
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  say(`downloaded ${link.download} (${blob.size} bytes)`);
}

// --- the history timeline ------------------------------------------------------

async function loadHistory() {
  const width = $("timeline").clientWidth || 900;
  const response = await call("explorer/history?bins=" + Math.max(20, Math.min(400, Math.floor(width / 6))));
  if (!response.ok) { sayError(await failure(response)); return; }
  state.history = await response.json();
  drawTimeline();
}

function timeScale(low, high, left, right) {
  const pad = Math.max((high - low) * 0.03, 3600000);
  const a = low - pad, b = high + pad;
  const x = (t) => left + ((t - a) / (b - a)) * (right - left);
  x.invert = (px) => a + ((px - left) / (right - left)) * (b - a);
  x.domain = [a, b];
  return x;
}

function spanScale(a, b, left, right) {
  const x = (t) => left + ((t - a) / (b - a)) * (right - left);
  x.invert = (px) => a + ((px - left) / (right - left)) * (b - a);
  x.domain = [a, b];
  return x;
}

function zoomTimeline(event) {
  // The wheel zooms the timeline around the pointer; a double click shows it all.
  if (!state.timeScale) return;
  event.preventDefault();
  const [a, b] = state.timeScale.domain, at = timelinePoint(event);
  const factor = event.deltaY > 0 ? 1.25 : 0.8;
  const span = Math.max((b - a) * factor, 60000);
  const share = (at - a) / (b - a);
  state.zoom = [at - span * share, at + span * (1 - share)];
  drawTimeline();
}

function ticks(a, b, count) {
  // Hours and days from the epoch; months and years from the calendar.
  const steps = [3600e3, 6 * 3600e3, 864e5, 7 * 864e5, 30 * 864e5, 91 * 864e5, 365 * 864e5, 5 * 365 * 864e5];
  const step = steps.find((s) => (b - a) / s <= count) || steps[steps.length - 1];
  const out = [];
  if (step < 30 * 864e5) {
    for (let t = Math.ceil(a / step) * step; t <= b; t += step) out.push(t);
    return {values: out, step};
  }
  const months = {[30 * 864e5]: 1, [91 * 864e5]: 3, [365 * 864e5]: 12, [5 * 365 * 864e5]: 60}[step];
  // Counted in months from year 0, so a step of five years falls on 2020, 2025, ...
  const first = new Date(a);
  const at = (index) => Date.UTC(Math.floor(index / 12), index % 12);
  let index = Math.ceil((first.getUTCFullYear() * 12 + first.getUTCMonth()) / months) * months;
  for (let t = at(index); t <= b; index += months, t = at(index)) {
    if (t >= a) out.push(t);
  }
  return {values: out, step};
}

function tickText(t, step) {
  const iso = new Date(t).toISOString();
  return step < 864e5 ? iso.slice(5, 16).replace("T", " ") : step < 365 * 864e5 ? iso.slice(0, 10) : iso.slice(0, 4);
}

function drawTimeline() {
  const area = $("timeline"), data = state.history;
  if (!data) return;
  area.replaceChildren();
  const width = area.clientWidth || 900, height = 150;
  area.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const x = state.zoom ? spanScale(state.zoom[0], state.zoom[1], 110, width - 12)
    : timeScale(data.low, Math.max(data.high, data.now), 110, width - 12);
  state.timeScale = x;
  const peak = Math.max(1, ...data.bins.map((b) => Math.max(b.entered, b.left, b.true_from, b.true_to)));
  const lanes = [[38, "entered", "left", "held (system)"], [96, "true_from", "true_to", "true (valid)"]];
  for (const [middle, up, down, name] of lanes) {
    label(area, 6, middle + 4, name, {"class": "tick"});
    svg("line", {x1: 110, x2: width - 12, y1: middle, y2: middle, stroke: "#c5ccd3"}, area);
    for (const bin of data.bins) {
      if (bin.to < x.domain[0] || bin.from > x.domain[1]) continue;
      const x0 = Math.max(110, x(bin.from)), w = Math.max(1, Math.min(x(bin.to), width - 12) - x0 - 0.5);
      const hUp = (bin[up] / peak) * 22, hDown = (bin[down] / peak) * 22;
      if (bin[up]) bar(area, x0, middle - hUp, w, hUp, up, bin, up);
      if (bin[down]) bar(area, x0, middle, w, hDown, down, bin, down);
    }
  }
  for (const mark of data.marks) {
    if (mark.at < x.domain[0] || mark.at > x.domain[1]) continue;
    const at = x(mark.at);
    svg("line", {x1: at, x2: at, y1: 6, y2: 124, "class": "mark"}, area);
    const head = svg("path", {d: `M ${at - 4} 2 L ${at + 4} 2 L ${at} 9 z`, "class": "mark-head"}, area);
    svg("title", {}, head).textContent = `${mark.operation}${mark.count ? " of " + mark.count : ""} at ${new Date(mark.at).toISOString()}`;
  }
  const {values, step} = ticks(x.domain[0], x.domain[1], Math.floor(width / 110));
  for (const t of values) {
    svg("line", {x1: x(t), x2: x(t), y1: 126, y2: 131, stroke: "#8a939c"}, area);
    label(area, x(t), 144, tickText(t, step), {"class": "tick", "text-anchor": "middle"});
  }
  if (x(data.now) >= 110 && x(data.now) <= width) {
    svg("line", {x1: x(data.now), x2: x(data.now), y1: 4, y2: 126, "class": "now"}, area);
  }
  const valid = parseTime(pickerValue("valid_at")), known = parseTime(pickerValue("as_of"));
  cursor(area, x(valid === null ? data.now : valid), "cursor-valid", "valid at");
  cursor(area, x(known === null ? data.now : known), "cursor-system", "as of");
}

function bar(area, x0, y, w, h, kind, bin, name) {
  const rect = svg("rect", {x: x0, y, width: w, height: Math.max(h, 1), "class": kind.replace("_", "-")}, area);
  const words = {entered: "entered", left: "left", true_from: "became true", true_to: "stopped being true"};
  svg("title", {}, rect).textContent = `${bin[name]} ${words[name]} ${new Date(bin.from).toISOString().slice(0, 16)}`;
}

function cursor(area, at, cls, text) {
  if (at < 110 || at > area.clientWidth) return;  // outside the zoomed span
  svg("line", {x1: at, x2: at, y1: 4, y2: 126, "class": cls}, area);
  label(area, at + 3, cls === "cursor-valid" ? 120 : 62, text, {"class": "tick"});
}

function timelinePoint(event) {
  const area = $("timeline"), box = area.getBoundingClientRect();
  const width = area.clientWidth || 900;
  const px = ((event.clientX - box.left) / box.width) * width;
  return Math.round(state.timeScale.invert(px) / 1000) * 1000;
}

function moveTo(ms) {
  const axis = $("drag-axis").value;
  if (axis !== "system") setPicker("valid_at", ms);
  if (axis !== "valid") setPicker("as_of", ms);
  drawTimeline();
}

function timelineDrag() {
  // A drag moves the point; a drag with Shift picks the two points of the changes view.
  const area = $("timeline");
  let dragging = false, range = null, pending = null;
  const later = () => { clearTimeout(pending); pending = setTimeout(run, 180); };
  area.addEventListener("pointerdown", (event) => {
    if (!state.timeScale) return;
    dragging = true;
    area.setPointerCapture(event.pointerId);
    if (event.shiftKey) range = {from: timelinePoint(event), to: timelinePoint(event)};
    else moveTo(timelinePoint(event));
  });
  area.addEventListener("pointermove", (event) => {
    if (!dragging) return;
    if (range) { range.to = timelinePoint(event); drawRange(range); } else { moveTo(timelinePoint(event)); later(); }
  });
  const stop = () => {
    if (!dragging) return;
    dragging = false;
    if (range) {
      setPicker("since", Math.min(range.from, range.to));
      setPicker("until", Math.max(range.from, range.to));
      range = null;
      showView("changes");
      compare();
    } else later();
  };
  area.addEventListener("pointerup", stop);
  area.addEventListener("pointercancel", stop);
  area.addEventListener("wheel", zoomTimeline, {passive: false});
  area.addEventListener("dblclick", () => { state.zoom = null; drawTimeline(); });
  area.addEventListener("keydown", (event) => {
    // Arrow keys step the point by one bin of the history (Shift: ten).
    if (!state.history || !["ArrowLeft", "ArrowRight"].includes(event.key)) return;
    event.preventDefault();
    const bins = state.history.bins, width = bins[0].to - bins[0].from;
    const axis = $("drag-axis").value === "system" ? "as_of" : "valid_at";
    const from = parseTime(pickerValue(axis)) ?? state.history.now;
    const step = Math.max(1000, Math.round(width / 1000) * 1000) * (event.shiftKey ? 10 : 1);
    moveTo(from + (event.key === "ArrowRight" ? 1 : -1) * step);
    later();
  });
}

function drawRange(range) {
  drawTimeline();
  const x = state.timeScale, a = x(Math.min(range.from, range.to)), b = x(Math.max(range.from, range.to));
  svg("rect", {x: a, y: 4, width: Math.max(b - a, 1), height: 122, "class": "range"}, $("timeline"));
}

// --- a subject's bitemporal timeline --------------------------------------------

const KIND_WORDS = {current: "current", superseded: "superseded", retracted: "retracted",
  past: "past (kept after supersession)"};

async function openSubject(subject) {
  $("subject").value = subject;
  showView("subject");
  const response = await call("explorer/subject?" + new URLSearchParams({subject}));
  const charts = $("subject-charts");
  charts.replaceChildren();
  if (!response.ok) { sayError(await failure(response)); return; }
  const data = await response.json();
  const prefixes = allPrefixes();
  if (!data.relations.length) {
    charts.textContent = `No belief about ${shorten(subject, prefixes)} in what this token sees.`;
    return;
  }
  const blank = blankNames();
  for (const relation of data.relations) charts.appendChild(subjectChart(data, relation, prefixes, blank));
  say(`${shorten(subject, prefixes)}: ${data.versions} versions over ${data.relations.length} relations`);
}

function hatches(defs) {
  for (const [kind, colour, path] of [["superseded", "#0072B2", "M0,8 L8,0"], ["retracted", "#D55E00", "M0,0 L8,8 M0,8 L8,0"],
    ["past", "#56B4E9", "M2,2 h1 M6,6 h1"]]) {
    const pattern = svg("pattern", {id: "hatch-" + kind, width: 8, height: 8, patternUnits: "userSpaceOnUse"}, defs);
    svg("rect", {width: 8, height: 8, fill: colour, "fill-opacity": 0.18}, pattern);
    svg("path", {d: path, stroke: colour, "stroke-width": 1.2}, pattern);
  }
}

const TOP = 46;  // a chart's title and legend above its plot

function subjectChart(data, relation, prefixes, blank) {
  const width = Math.min(900, $("view-subject").clientWidth || 900), height = 320;
  const chart = svg("svg", {"class": "chart", width, height, viewBox: `0 0 ${width} ${height}`, role: "img"});
  hatches(svg("defs", {}, chart));
  const edges = relation.regions.flatMap((r) => [...r.valid, ...r.known]).filter((t) => t !== null);
  const low = Math.min(...edges), high = Math.max(...edges, data.now);
  const x = timeScale(low, high, 70, width - 20);
  const yFlat = timeScale(low, high, height - 40, TOP);
  const versions = relation.regions.filter((r) => r.kind !== "past").length;
  const title = `${shorten(data.subject, prefixes)} ${shorten(relation.relation, prefixes)}: ` +
    `${versions} version${versions === 1 ? "" : "s"}`;
  label(chart, 70, 18, title, {"class": "title"});
  axes(chart, x, yFlat, width, height);
  for (const region of relation.regions) {
    const x0 = x(region.valid[0]), x1 = region.valid[1] === null ? width - 20 : x(region.valid[1]);
    const y0 = yFlat(region.known[0]), y1 = region.known[1] === null ? TOP : yFlat(region.known[1]);
    const rect = svg("rect", {x: x0, y: y1, width: Math.max(x1 - x0, 2), height: Math.max(y0 - y1, 2),
      "class": "kind-" + region.kind, "stroke-width": 1.2}, chart);
    rect.dataset.kind = region.kind;
    svg("title", {}, rect).textContent = `${KIND_WORDS[region.kind]}: ${region.object}\nvalid ` +
      `${when(region.valid[0])} – ${when(region.valid[1])}\nknown ${when(region.known[0])} – ${when(region.known[1])}`;
    if (region.kind !== "past") {
      const text = fieldText(region.object, prefixes, blank);
      label(chart, (x0 + x1) / 2, (y0 + y1) / 2 + 4, text.length > 28 ? text.slice(0, 27) + "…" : text,
        {"text-anchor": "middle"});
    }
  }
  const valid = parseTime(pickerValue("valid_at")), known = parseTime(pickerValue("as_of"));
  svg("circle", {cx: x(valid ?? data.now), cy: yFlat(known ?? data.now), r: 5, "class": "here"}, chart);
  legend(chart, relation.regions, width);
  chart.addEventListener("click", (event) => {
    const box = chart.getBoundingClientRect();
    setPicker("valid_at", Math.round(x.invert(event.clientX - box.left) / 1000) * 1000);
    setPicker("as_of", Math.round(yFlat.invert(event.clientY - box.top) / 1000) * 1000);
    drawTimeline();
    run().then(() => showView("subject"));
    openSubject(data.subject);
  });
  return chart;
}

function when(ms) { return ms === null ? "open" : new Date(ms).toISOString().slice(0, 10); }

function axes(chart, x, y, width, height) {
  const {values, step} = ticks(x.domain[0], x.domain[1], Math.floor(width / 120));
  for (const t of values) {
    svg("line", {x1: x(t), x2: x(t), y1: TOP, y2: height - 40, "class": "grid"}, chart);
    label(chart, x(t), height - 26, tickText(t, step), {"text-anchor": "middle"});
    svg("line", {x1: 70, x2: width - 20, y1: y(t), y2: y(t), "class": "grid"}, chart);
    label(chart, 64, y(t) + 4, tickText(t, step), {"text-anchor": "end"});
  }
  label(chart, width / 2, height - 8, "valid time (when it was true) →", {"text-anchor": "middle"});
  label(chart, 12, height / 2, "system time (when we knew it) →",
    {"text-anchor": "middle", transform: `rotate(-90 12 ${height / 2})`});
}

function legend(chart, regions, width) {
  const kinds = [...new Set(regions.map((r) => r.kind))];
  let left = 70;
  for (const kind of kinds) {
    svg("rect", {x: left, y: 26, width: 14, height: 11, "class": "kind-" + kind}, chart);
    const words = KIND_WORDS[kind];
    label(chart, left + 18, 35, words);
    left += 30 + words.length * 6;
  }
  svg("circle", {cx: left + 5, cy: 31, r: 4, "class": "here"}, chart);
  label(chart, left + 13, 35, "the point of the pickers (click to move it)");
}

// --- what changed between two points --------------------------------------------

async function compare() {
  const params = new URLSearchParams({since: pickerValue("since"), axis: $("axis").value});
  if (pickerValue("until")) params.set("until", pickerValue("until"));
  const response = await call("explorer/changes?" + params);
  const out = $("changes");
  out.replaceChildren();
  if (!response.ok) { sayError(await failure(response)); return; }
  const data = await response.json(), prefixes = allPrefixes(), blank = blankNames();
  for (const side of ["entered", "left"]) {
    const head = out.appendChild(document.createElement("h3"));
    head.className = side + "-head";
    head.textContent = `${side === "entered" ? "Entered" : "Left"}: ${data.counts[side]}`;
    const table = out.appendChild(document.createElement("table"));
    table.id = "changes-" + side;
    const top = table.createTHead().insertRow();
    for (const name of ["subject", "relation", "object", "valid from", "status"]) {
      top.appendChild(document.createElement("th")).textContent = name;
    }
    const body = table.createTBody();
    for (const belief of data[side]) {
      const row = body.insertRow();
      const subject = row.insertCell();
      subject.className = "iri";
      subject.dataset.iri = belief.subject;
      for (const [cell, value] of [[subject, belief.subject], [row.insertCell(), belief.relation],
                                   [row.insertCell(), belief.object]]) {
        cell.textContent = fieldText(value, prefixes, blank);
        if (typeof value === "string" && cell.textContent !== value) cell.title = value;  // the full term
      }
      row.insertCell().textContent = new Date(belief.valid_from).toISOString().slice(0, 19) + "Z";
      row.insertCell().textContent = belief.status;
    }
  }
  say(`between ${new Date(data.since).toISOString()} and ${new Date(data.until).toISOString()} ` +
    `(${data.axis}): ${data.counts.entered} entered, ${data.counts.left} left`);
}

// --- views, prefixes, start -----------------------------------------------------

function showView(name) {
  for (const tab of document.querySelectorAll(".tabs button")) {
    tab.setAttribute("aria-selected", String(tab.dataset.view === name));
  }
  for (const view of document.querySelectorAll(".view")) view.hidden = view.id !== "view-" + name;
}

async function loadPrefixes() {
  const response = await call("explorer/prefixes");
  if (!response.ok) return;
  const data = await response.json();
  state.declared = data.declared;
  state.prefixes = Object.assign({}, data.common, data.store, data.declared);
}

function wire() {
  const area = $("query");
  area.addEventListener("input", () => { edited(); openCompletionSoon(); });
  area.addEventListener("scroll", syncScroll);
  area.addEventListener("keydown", editorKeys);
  area.addEventListener("blur", () => setTimeout(closeCompletion, 150));
  $("ask").addEventListener("submit", (event) => { event.preventDefault(); run(); });
  $("download").addEventListener("click", download);
  $("now").addEventListener("click", () => { setPicker("valid_at", null); setPicker("as_of", null); run(); });
  for (const id of ["valid_at", "as_of"]) {
    $(id).addEventListener("change", () => { delete state.given[id]; drawTimeline(); run(); });
  }
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = $("token").value.trim();
    if (value) sessionStorage.setItem(TOKEN_KEY, value); else sessionStorage.removeItem(TOKEN_KEY);
    $("token").value = "";
    showToken(false);
    start();
  });
  $("token-forget").addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); showToken(false); });
  for (const tab of document.querySelectorAll(".tabs button")) {
    tab.addEventListener("click", () => showView(tab.dataset.view));
  }
  document.body.addEventListener("click", (event) => {
    const cell = event.target.closest("td.iri");
    if (cell) openSubject(cell.dataset.iri);
  });
  $("subject-form").addEventListener("submit", (event) => { event.preventDefault(); openSubject($("subject").value.trim()); });
  $("changes-form").addEventListener("submit", (event) => { event.preventDefault(); compare(); });
  timelineDrag();
  window.addEventListener("resize", drawTimeline);
}

let completionTimer = null;
function openCompletionSoon() {
  clearTimeout(completionTimer);
  completionTimer = setTimeout(() => { if (document.activeElement === $("query")) openCompletion(); }, 60);
}

async function start() {
  await loadPrefixes();
  await loadHistory();
  const given = new URLSearchParams(location.search);
  if (!$("since").value && state.history) setPicker("since", state.history.low);
  if (given.has("query")) await run();
  if (given.has("subject")) await openSubject(given.get("subject"));
}

function begin() {
  wire();
  const given = new URLSearchParams(location.search);
  if (given.has("query")) $("query").value = given.get("query");
  for (const name of ["valid_at", "as_of"]) {
    if (given.has(name)) {
      setPicker(name, parseTime(given.get(name)));
      state.given[name] = given.get(name);
    }
  }
  highlight();
  showToken(false);
  start().finally(() => { if (state.busy === 0) document.body.dataset.state = "idle"; });
}

begin();
