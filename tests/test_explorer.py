"""The explorer at ``/``: its JSON routes and assets (default tier), and the page
itself in headless Chromium driven over the DevTools protocol, against a real
``oms-rdf serve`` on loopback (servers tier).

Screenshots go to ``$OMS_RDF_ARTIFACTS`` (default: the test's tmp dir); each path
is printed.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import httpx
import pytest

from oms_rdf import GrainStore
from oms_rdf.http.app import Token, create_app
from oms_rdf.store import PREFIXES
from tests.helpers import free_port, running

DAY = 86_400_000
T0 = 1_700_000_000_000
NOW = T0 + 100 * DAY
EX = "http://example.org/"
WORKS = f"SELECT ?o WHERE {{ <{EX}ann> <{EX}worksAt> ?o }}"
SECRET = "explorer-secret-0123456789"  # a reader of namespace "shared"
HR = "explorer-hr-secret-0123456789"  # a reader of namespace "hr"


def iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000))


def history(store: GrainStore) -> None:
    """Ann moves from Acme to Initech; Bo's city is retracted; a Turtle source is
    adopted; HR keeps a salary in its own namespace."""
    old = store.put({"type": "belief", "subject": EX + "ann", "relation": EX + "worksAt",
                     "object": EX + "acme", "confidence": 0.9, "created_at": T0,
                     "valid_from": T0})  # fmt: skip
    store.supersede(old, {"type": "belief", "subject": EX + "ann", "relation": EX + "worksAt",
                          "object": EX + "initech", "confidence": 0.9,
                          "created_at": T0 + 50 * DAY, "valid_from": T0 + 40 * DAY})  # fmt: skip
    city = store.put({"type": "belief", "subject": EX + "bo", "relation": EX + "livesIn",
                      "object": EX + "paris", "confidence": 0.8,
                      "created_at": T0 + 10 * DAY, "valid_to": T0 + 30 * DAY})  # fmt: skip
    store.retract(city, reason="moved")
    store.put({"type": "belief", "subject": EX + "ann", "relation": EX + "salary",
               "object": "100", "confidence": 1.0, "created_at": T0 + 20 * DAY,
               "namespace": "hr"})  # fmt: skip
    store.import_(io.BytesIO(b"""
        @prefix ex: <http://example.org/> .
        ex:ann ex:name "Ann"@en ; ex:knows [ ex:name "Bo" ] .
    """), format="turtle")  # fmt: skip


class Served:
    """A real ``oms-rdf serve`` over an on-disk store, on a loopback port."""

    def __init__(self, folder: Path, tokens: dict[str, Any] | None = None) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "oms_rdf", "serve", "--store", str(folder),
                   "--port", str(self.port)]  # fmt: skip
        if tokens is not None:
            token_file = folder.parent / f"{folder.name}-tokens.json"
            token_file.write_text(json.dumps(tokens))
            command += ["--token-file", str(token_file)]
        self.log = folder.parent / f"{folder.name}-serve.log"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(command, stderr=log)
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(self.base + "/explorer/static/explorer.css", timeout=2)
                break
            except httpx.HTTPError:
                assert self.process.poll() is None, self.log.read_text()
                assert time.monotonic() < deadline, "oms-rdf serve did not start"
                time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def stored(folder: Path) -> Path:
    store = GrainStore(folder, clock=lambda: NOW)
    history(store)
    store.close()
    return folder


@pytest.fixture(scope="module")
def local() -> Iterator[str]:
    """The explorer's routes over a store with a history (in memory, clock at NOW)."""
    store = GrainStore(clock=lambda: NOW)
    history(store)
    with running(create_app(store)) as base:
        yield base


@pytest.fixture(scope="module")
def guarded() -> Iterator[str]:
    store = GrainStore(clock=lambda: NOW)
    history(store)
    tokens = {SECRET: Token(namespaces=("shared",)), HR: Token(namespaces=("hr",))}
    with running(create_app(store, tokens=tokens)) as base:
        yield base


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    server = Served(stored(tmp_path_factory.mktemp("explorer") / "open.db"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def protected(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = stored(tmp_path_factory.mktemp("explorer") / "protected.db")
    server = Served(folder, {SECRET: {"namespaces": ["shared"]},
                             HR: {"namespaces": ["hr"]}})  # fmt: skip
    yield server
    server.stop()


# --- the JSON routes and the assets, without a browser ---------------------------------


def test_history_counts_beliefs_on_both_axes_and_marks_the_import(
    local: str,
) -> None:
    got = httpx.get(local + "/explorer/history", params={"bins": 50}).json()
    assert got["now"] == NOW  # the store's clock
    assert got["low"] == T0 and len(got["bins"]) == 50
    assert got["beliefs"] == 7  # 2 + 1 + 1 grains, and 3 triples of the import
    assert sum(b["entered"] for b in got["bins"]) == 7
    # Acme left when Initech came (its system time ended) and Paris at the retraction.
    assert sum(b["left"] for b in got["bins"]) == 2
    assert sum(b["true_from"] for b in got["bins"]) == 7
    assert sum(b["true_to"] for b in got["bins"]) == 1  # Paris, until T0 + 30 days
    assert [m["operation"] for m in got["marks"]] == ["import"]
    assert got["marks"][0] == {"at": NOW, "operation": "import", "count": 3}
    first = next(b for b in got["bins"] if b["entered"])
    assert first["from"] <= T0 < first["to"]


def test_history_and_every_view_of_a_token_keep_to_its_namespaces(
    guarded: str,
) -> None:
    base = guarded
    assert httpx.get(base + "/explorer/history").status_code == 401
    hr = httpx.get(base + "/explorer/history", headers=bearer(HR)).json()
    assert hr["beliefs"] == 1 and hr["marks"] == []  # the import is not its own
    shared = httpx.get(base + "/explorer/history", headers=bearer(SECRET)).json()
    assert shared["beliefs"] == 6
    subject = httpx.get(base + "/explorer/subject", params={"subject": EX + "ann"},
                        headers=bearer(HR)).json()  # fmt: skip
    assert [r["relation"] for r in subject["relations"]] == [EX + "salary"]
    delta = httpx.get(base + "/explorer/changes", params={"since": iso(T0 - DAY)},
                      headers=bearer(HR)).json()  # fmt: skip
    assert [b["object"] for b in delta["entered"]] == ["100"]
    prefixes = httpx.get(base + "/explorer/prefixes", headers=bearer(HR)).json()
    assert "hr" in prefixes["store"] and "shared" not in prefixes["store"]


def bearer(secret: str) -> dict[str, str]:
    return {"authorization": f"Bearer {secret}"}


def test_subject_versions_are_the_regions_of_the_bitemporal_timeline(
    local: str, tmp_path: Path
) -> None:
    got = httpx.get(local + "/explorer/subject",
                    params={"subject": EX + "ann", "relation": EX + "worksAt"}).json()  # fmt: skip
    (works,) = got["relations"]
    kinds = [(r["kind"], r["object"], r["valid"], r["known"]) for r in works["regions"]]
    assert kinds == [
        ("superseded", EX + "acme", [T0, None], [T0, T0 + 50 * DAY]),
        # after the supersession, Acme still describes the time before Initech
        ("past", EX + "acme", [T0, T0 + 40 * DAY], [T0 + 50 * DAY, None]),
        ("current", EX + "initech", [T0 + 40 * DAY, None], [T0 + 50 * DAY, None]),
    ]
    bo = httpx.get(local + "/explorer/subject", params={"subject": EX + "bo"}).json()
    (city,) = bo["relations"][0]["regions"]
    assert (city["kind"], city["valid"]) == (
        "retracted",
        [T0 + 10 * DAY, T0 + 30 * DAY],
    )
    assert city["known"] == [T0 + 10 * DAY, NOW]  # retracted by the store's clock
    missing = httpx.get(local + "/explorer/subject")
    assert missing.status_code == 400 and missing.json()["code"] == "ERR_SCHEMA"


def test_a_transaction_is_one_mark_and_odd_chains_are_drawn() -> None:
    """A transaction of three puts made three marks (one per target); a successor
    valid from its system_valid_from ended its predecessor's past at its
    created_at; an erased middle version made the subject a 500."""
    store = GrainStore(clock=lambda: NOW)
    with store.transaction() as tx:
        for name in ("p1", "p2", "p3"):
            tx.put({"type": "belief", "subject": EX + name, "relation": EX + "worksAt",
                    "object": EX + "acme", "confidence": 0.9, "created_at": T0})  # fmt: skip
    old = store.put({"type": "belief", "subject": EX + "bo", "relation": EX + "worksAt",
                     "object": EX + "acme", "confidence": 0.9, "created_at": T0})  # fmt: skip
    middle = store.supersede(old, {"type": "belief", "subject": EX + "bo",
                                   "relation": EX + "worksAt", "object": EX + "initech",
                                   "confidence": 0.9, "created_at": T0 + DAY,
                                   "system_valid_from": T0 + 20 * DAY})  # fmt: skip
    with running(create_app(store)) as base:
        marks = httpx.get(base + "/explorer/history").json()["marks"]
        assert [m["operation"] for m in marks].count("transaction") == 1
        bo = httpx.get(base + "/explorer/subject", params={"subject": EX + "bo"}).json()
        past = [
            r["valid"] for r in bo["relations"][0]["regions"] if r["kind"] == "past"
        ]
        assert past == [[T0, T0 + 20 * DAY]]
        store.supersede(middle, {"type": "belief", "subject": EX + "bo",
                                 "relation": EX + "worksAt", "object": EX + "globex",
                                 "confidence": 0.9, "created_at": T0 + 30 * DAY})  # fmt: skip
        store.erase(middle, reason="asked to")
        bo = httpx.get(base + "/explorer/subject", params={"subject": EX + "bo"})
        assert bo.status_code == 200, bo.text
        drawn = {(r["kind"], r["object"]) for r in bo.json()["relations"][0]["regions"]}
        assert drawn == {("superseded", EX + "acme"), ("current", EX + "globex")}


def test_changes_between_two_points_are_the_stores(local: str, tmp_path: Path) -> None:
    since, until = T0 + 30 * DAY, T0 + 60 * DAY
    got = httpx.get(local + "/explorer/changes",
                    params={"since": iso(since), "until": str(until)}).json()  # fmt: skip
    assert [b["object"] for b in got["entered"]] == [EX + "initech"]
    assert [b["object"] for b in got["left"]] == [EX + "acme"]
    assert got["counts"] == {"entered": 1, "left": 1}
    assert (got["since"], got["until"], got["axis"]) == (since, until, "both")
    bad = httpx.get(local + "/explorer/changes", params={"since": "last week"})
    assert bad.status_code == 400 and bad.json()["code"] == "ERR_SCHEMA"
    assert bad.json()["path"] == "since"
    axis = httpx.get(local + "/explorer/changes",
                     params={"since": iso(since), "axis": "sideways"})  # fmt: skip
    assert axis.status_code == 400 and "axis" in axis.json()["message"]
    bins = httpx.get(local + "/explorer/history", params={"bins": "0"})
    assert bins.status_code == 400 and bins.json()["path"] == "bins"


def test_prefixes_are_the_stores_its_base_iris_and_common_ones(local: str) -> None:
    got = httpx.get(local + "/explorer/prefixes").json()
    assert got["declared"] == PREFIXES
    assert got["store"]["rel"] == "https://w3id.org/oms-rdf/id/rel/"
    assert got["store"]["hr"] == "https://w3id.org/oms-rdf/id/entity/hr/"
    assert got["common"]["skos"] == "http://www.w3.org/2004/02/skos/core#"


URL = re.compile(
    r"""(?:src|href|action)\s*=\s*["']([^"']*)["']|url\(\s*["']?([^)"']*)"""
)


def test_the_page_and_its_assets_name_no_other_site(local: str) -> None:
    page = httpx.get(local + "/")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assets = {name: httpx.get(f"{local}/explorer/static/{name}")
              for name in ("explorer.js", "explorer.css")}  # fmt: skip
    assert assets["explorer.js"].headers["content-type"].startswith("text/javascript")
    for text in (page.text, *(a.text for a in assets.values())):
        for link in (a or b for a, b in URL.findall(text)):
            assert not re.match(r"(?:[a-z]+:)?//", link), link  # relative, or #id
    script = assets["explorer.js"].text
    # The only absolute IRIs in the script are names (SVG's, XSD's), never fetched.
    assert set(re.findall(r"https?://[^\s\"'`]+", script)) == {
        "http://www.w3.org/2000/svg",
        "http://www.w3.org/2001/XMLSchema#",
    }
    assert re.findall(r"\bfetch\(([^,)]*)", script) == ["path"]  # only call() fetches
    assert httpx.get(local + "/explorer/static/other.js").status_code == 404


# --- the page in headless Chromium ----------------------------------------------------


def artifacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("OMS_RDF_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Page:
    """One tab of a headless Chromium, driven over the DevTools protocol."""

    def __init__(self, profile: Path) -> None:
        import websocket  # websocket-client, the [test] extra

        browser = shutil.which("chromium") or shutil.which("chromium-browser")
        assert browser is not None, "Debian's chromium is needed; .ci/run installs it"
        # No network but loopback: every other address goes to a proxy that is not there.
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-extensions", "--window-size=1280,1100",
                 "--proxy-server=http://127.0.0.1:9", "--remote-debugging-port=0",
                 f"--user-data-dir={profile}", "about:blank"]  # fmt: skip
        self.process = subprocess.Popen([browser, *flags], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)  # fmt: skip
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and len(port_file.read_text().split()) == 2):
            assert time.monotonic() < deadline, "chromium did not start"
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        tabs = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
        target = next(t for t in tabs if t["type"] == "page")
        self.socket = websocket.create_connection(
            target["webSocketDebuggerUrl"], timeout=60, suppress_origin=True
        )
        self.sequence = 0
        self.events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Network"):
            self.send(f"{domain}.enable")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.sequence += 1
        self.socket.send(
            json.dumps({"id": self.sequence, "method": method, "params": params})
        )
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.sequence:
                assert "error" not in message, (method, message["error"])
                result: dict[str, Any] = message["result"]
                return result
            self.events.append(message)

    def js(self, expression: str) -> Any:
        got = self.send("Runtime.evaluate", expression=expression, awaitPromise=True,
                        returnByValue=True)  # fmt: skip
        assert "exceptionDetails" not in got, got["exceptionDetails"]
        return got["result"].get("value")

    def wait(self, condition: str, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(condition)
            if value:
                return value
            assert time.monotonic() < deadline, f"never true: {condition}"
            time.sleep(0.1)

    def open(self, url: str) -> None:
        # The page being left is marked, so that only the new one can answer "idle".
        self.js("document.body && (document.body.dataset.state = 'leaving')")
        self.send("Page.navigate", url=url)
        self.wait(
            "document.readyState === 'complete' && document.body.dataset.state === 'idle'"
        )

    def run(self) -> None:
        """Click Run; wait for the answer."""
        before = int(self.js("Number(document.body.dataset.renders || 0)"))
        self.click("#run")
        self.wait(f"Number(document.body.dataset.renders || 0) > {before}")

    def center(self, selector: str) -> tuple[float, float]:
        box = self.js(f"(() => {{ const r = document.querySelector({selector!r})"
                      ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")  # fmt: skip
        return box[0], box[1]

    def click(self, selector: str) -> None:
        self.js(
            f"document.querySelector({selector!r}).scrollIntoView({{block: 'center'}})"
        )
        x, y = self.center(selector)
        self.mouse(x, y)

    def mouse(
        self, x: float, y: float, *, to: float | None = None, shift: bool = False
    ) -> None:
        """Press at (x, y), move to (to, y) in steps if given, release there."""
        keys = {"modifiers": 8 if shift else 0}
        self.send("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y, **keys)
        self.send("Input.dispatchMouseEvent", type="mousePressed", x=x, y=y,
                  button="left", buttons=1, clickCount=1, **keys)  # fmt: skip
        end = x
        if to is not None:
            for step in range(1, 11):
                end = x + (to - x) * step / 10
                self.send("Input.dispatchMouseEvent", type="mouseMoved", x=end, y=y,
                          button="left", buttons=1, **keys)  # fmt: skip
        self.send("Input.dispatchMouseEvent", type="mouseReleased", x=end, y=y,
                  button="left", buttons=0, clickCount=1, **keys)  # fmt: skip

    def drag_timeline(self, start: int, end: int, *, shift: bool = False) -> None:
        """Drag on the history timeline from one time to another."""
        self.js("document.getElementById('timeline').scrollIntoView({block: 'center'})")
        box = self.js("(() => { const r = document.getElementById('timeline')"
                      ".getBoundingClientRect(); return [r.x, r.y, r.width]; })()")  # fmt: skip
        scale = box[2] / self.js("document.getElementById('timeline').clientWidth")
        a, b = (self.js(f"state.timeScale({t})") * scale + box[0] for t in (start, end))
        self.mouse(a, box[1] + 70, to=b, shift=shift)

    def type(self, selector: str, text: str, *, replace: bool = True) -> None:
        """Focus a field and type into it, as a person does."""
        self.js(f"(() => {{ const e = document.querySelector({selector!r}); e.focus();"
                f" if ({json.dumps(replace)}) e.select(); }})()")  # fmt: skip
        self.send("Input.insertText", text=text)

    def key(self, key: str, code: str, keycode: int) -> None:
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", type=kind, key=key, code=code,
                      windowsVirtualKeyCode=keycode)  # fmt: skip

    def pick(self, selector: str, value: str) -> None:
        """Set a picker as its own widget does: the value, then its change event."""
        self.js(f"(() => {{ const e = document.querySelector({selector!r}); e.value = {value!r};"
                " e.dispatchEvent(new Event('change', {bubbles: true})); })()")  # fmt: skip

    def texts(self, selector: str) -> list[str]:
        return list(
            self.js(
                f"[...document.querySelectorAll({selector!r})].map(e => e.textContent)"
            )
        )

    def terms(self, selector: str) -> list[str]:
        """The cells' terms in full: a shortened IRI's title holds the IRI."""
        return list(
            self.js(
                f"[...document.querySelectorAll({selector!r})]"
                ".map(e => e.title || e.textContent)"
            )
        )

    def screenshot(self, path: Path) -> None:
        shot = self.send(
            "Page.captureScreenshot", format="png", captureBeyondViewport=True
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        print(f"screenshot: {path}")

    def requested(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]  # fmt: skip

    def close(self) -> None:
        self.socket.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    tab = Page(tmp_path_factory.mktemp("chromium-profile"))
    yield tab
    tab.close()


def parsed(picked: str) -> int:
    """A picker's value (UTC) as epoch ms."""
    from datetime import UTC, datetime

    return round(datetime.fromisoformat(picked).replace(tzinfo=UTC).timestamp() * 1000)


def near(picked: str, ms: int) -> None:
    """A picker's value is within two days of ``ms`` (a pixel of the timeline is
    about a day of its span)."""
    assert abs(parsed(picked) - ms) < 2 * DAY, (picked, iso(ms))


def answer(page: Page) -> list[str]:
    return page.terms("#results tbody td")


@pytest.mark.servers("chromium")
def test_a_query_runs_and_the_time_pickers_change_its_answer(
    served: Served, page: Page, tmp_path: Path
) -> None:
    page.open(served.base + "/")
    page.type("#query", WORKS)
    page.run()
    assert answer(page) == [f"{EX}initech"]
    # shortened by the prefix the adopted Turtle declared
    assert page.texts("#results tbody td") == ["ex:initech"]
    assert page.js("document.getElementById('status').textContent").startswith("1 rows")
    page.pick("#valid_at", iso(T0 + 20 * DAY))  # before the move, as known now
    page.wait(
        "document.querySelector('#results tbody td').textContent.endsWith('acme')"
    )
    assert answer(page) == [f"{EX}acme"]
    page.pick("#valid_at", iso(T0 + 45 * DAY))  # after it in the world...
    page.pick("#as_of", iso(T0 + 45 * DAY))  # ...but before the store learnt of it
    page.wait("document.getElementById('status').textContent.includes('as of 20')")
    page.wait(
        "document.querySelector('#results tbody td').textContent.endsWith('acme')"
    )
    page.pick("#as_of", "")
    page.wait(
        "document.querySelector('#results tbody td').textContent.endsWith('initech')"
    )
    assert "valid_at=" in page.js("location.search")  # the link carries the point
    page.screenshot(artifacts(tmp_path) / "explorer-query.png")
    # A point the address gives is read by the server's rule, to the millisecond:
    # the browser's reading dropped "ms:" forms (now) and milliseconds.
    moved = T0 + 40 * DAY  # initech is valid from this millisecond on
    for given, expected in ((f"ms:{moved - 1}", "acme"), (f"ms:{moved}", "initech"),
                            (iso(moved - 1000) + ".999Z", "acme")):  # fmt: skip
        page.open(served.base + f"/?query={quote(WORKS)}&valid_at={quote(given)}")
        page.wait("!!document.querySelector('#results tbody td')")
        assert answer(page) == [f"{EX}{expected}"], given
        assert given in unquote(page.js("location.search"))  # kept as written


@pytest.mark.servers("chromium")
def test_dragging_the_timeline_moves_the_point(
    served: Served, page: Page, tmp_path: Path
) -> None:
    page.open(served.base + f"/?query={quote(WORKS)}")
    page.wait("document.querySelectorAll('#results tbody td').length === 1")
    assert answer(page) == [f"{EX}initech"]
    page.drag_timeline(T0 + 60 * DAY, T0 + 20 * DAY)
    page.wait(
        "document.querySelector('#results tbody td').textContent.endsWith('acme')"
    )
    valid = page.js("document.getElementById('valid_at').value")
    as_of = page.js("document.getElementById('as_of').value")
    assert valid == as_of  # the drag moved both axes...
    near(valid, T0 + 20 * DAY)  # ...to where it ended
    assert page.js("document.querySelectorAll('#timeline .mark').length") == 1
    # The wheel zooms in around the pointer; a double click shows it all again.
    whole = page.js("state.timeScale.domain[1] - state.timeScale.domain[0]")
    x, y = page.center("#timeline")
    for _ in range(3):
        page.send("Input.dispatchMouseEvent", type="mouseWheel", x=x, y=y, deltaX=0,
                  deltaY=-120)  # fmt: skip
    page.wait(f"state.timeScale.domain[1] - state.timeScale.domain[0] < {whole} * 0.6")
    page.screenshot(artifacts(tmp_path) / "explorer-timeline-zoomed.png")
    page.send("Input.dispatchMouseEvent", type="mousePressed", x=x, y=y, button="left",
              clickCount=2)  # fmt: skip
    page.send("Input.dispatchMouseEvent", type="mouseReleased", x=x, y=y, button="left",
              clickCount=2)  # fmt: skip
    page.wait(f"state.timeScale.domain[1] - state.timeScale.domain[0] === {whole}")
    # Its arrow keys step the point by one bin of the history.
    valid = page.js("document.getElementById('valid_at').value")  # the click moved it
    width = page.js("state.history.bins[0].to - state.history.bins[0].from")
    page.js("document.getElementById('timeline').focus()")
    page.key("ArrowLeft", "ArrowLeft", 37)
    stepped = page.js("document.getElementById('valid_at').value")
    assert parsed(stepped) == parsed(valid) - max(1000, (width + 500) // 1000 * 1000)
    assert page.js("document.getElementById('as_of').value") == stepped
    page.screenshot(artifacts(tmp_path) / "explorer-timeline.png")


@pytest.mark.servers("chromium")
def test_a_subjects_bitemporal_timeline_opens_from_its_iri(
    served: Served, page: Page, tmp_path: Path
) -> None:
    page.open(served.base + "/")
    page.type("#query", f"SELECT ?s WHERE {{ ?s <{EX}worksAt> ?o }}")
    page.run()
    page.click("#results td.iri")
    # worksAt, name, knows, and the salary of namespace hr (no token: every namespace)
    page.wait("document.querySelectorAll('#subject-charts svg.chart').length === 4")
    titles = page.texts("#subject-charts .title")
    assert any(t.endswith("worksAt: 2 versions") for t in titles), titles
    kinds = page.js("[...document.querySelectorAll('#subject-charts rect[data-kind]')]"
                    ".map(r => r.dataset.kind)")  # fmt: skip
    assert sorted(kinds) == ["current"] * 4 + ["past", "superseded"]
    # The blank node Ann knows is numbered, not its hex label.
    labels = page.texts("#subject-charts text")
    assert "_:b1" in labels and not any(
        re.fullmatch(r"_:b?[0-9a-f]{16,}", t) for t in labels
    )
    page.screenshot(artifacts(tmp_path) / "explorer-subject.png")
    page.open(served.base + "/?subject=" + quote(EX + "bo"))  # a link to a subject
    page.wait("document.querySelectorAll('#subject-charts svg.chart').length === 1")
    assert (
        page.js("document.querySelector('rect[data-kind]').dataset.kind") == "retracted"
    )
    assert page.texts("#subject-charts .title")[0].endswith(": 1 version")
    # Ticks five years apart fall on 2020 and 2025 (they skipped to one, 2024).
    years = page.js("ticks(Date.UTC(2019, 9, 17), Date.UTC(2027, 1, 21), 7).values"
                    ".map((t) => new Date(t).toISOString().slice(0, 10))")  # fmt: skip
    assert years == ["2020-01-01", "2025-01-01"]


@pytest.mark.servers("chromium")
def test_the_changes_between_two_points(
    served: Served, page: Page, tmp_path: Path
) -> None:
    page.open(served.base + "/")
    page.click(".tabs [data-view=changes]")
    page.pick("#since", iso(T0 + 30 * DAY))
    page.pick("#until", iso(T0 + 60 * DAY))
    page.click("#changes-form button")
    page.wait("!!document.querySelector('#changes-left tbody td')")
    assert page.js("document.getElementById('status').textContent").endswith(
        "(both): 1 entered, 1 left"
    )
    entered = page.terms("#changes-entered tbody td")
    left = page.terms("#changes-left tbody td")
    assert entered[:3] == [f"{EX}ann", f"{EX}worksAt", f"{EX}initech"]
    assert left[:3] == [f"{EX}ann", f"{EX}worksAt", f"{EX}acme"]
    # Shift and drag on the timeline: the two points of the changes view.
    page.drag_timeline(T0 + 5 * DAY, T0 + 15 * DAY, shift=True)
    page.wait(
        "document.getElementById('status').textContent.endsWith('1 entered, 0 left')"
    )
    assert page.terms("#changes-entered tbody td")[2] == f"{EX}paris"
    near(page.js("document.getElementById('since').value"), T0 + 5 * DAY)
    near(page.js("document.getElementById('until').value"), T0 + 15 * DAY)
    page.screenshot(artifacts(tmp_path) / "explorer-changes.png")


@pytest.mark.servers("chromium")
def test_construct_is_drawn_as_a_graph_with_blank_nodes_numbered(
    served: Served, page: Page, tmp_path: Path
) -> None:
    page.open(served.base + "/")
    page.type("#query", f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ ?s ?p ?o FILTER(?s = <{EX}ann> "
                        "|| isBlank(?s)) }")  # fmt: skip
    page.run()
    assert page.js("document.getElementById('view-graph').hidden") is False
    assert page.js("document.querySelectorAll('#graph circle').length") >= 3
    cells = answer(page)
    assert "_:b1" in cells and '"Bo"' not in cells and "Bo" in cells
    assert not any(re.fullmatch(r"_:[0-9a-f]{8,}", c) for c in cells)
    assert page.js("document.getElementById('download').disabled") is False
    formats = page.js(
        "[...document.getElementById('download-format').options].map(o => o.value)"
    )
    assert formats == ["text/turtle", "application/n-triples", "application/ld+json"]
    page.screenshot(artifacts(tmp_path) / "explorer-graph.png")


@pytest.mark.servers("chromium")
def test_the_answer_downloads(served: Served, page: Page, tmp_path: Path) -> None:
    folder = tmp_path / "downloads"
    folder.mkdir()
    page.send("Browser.setDownloadBehavior", behavior="allow", downloadPath=str(folder))
    page.open(served.base + "/")
    page.type("#query", f"CONSTRUCT {{ <{EX}ann> ?p ?o }} WHERE {{ <{EX}ann> ?p ?o }}")
    page.run()
    page.click("#download")
    deadline = time.monotonic() + 30
    while not (folder / "answer.ttl").exists():
        assert time.monotonic() < deadline, list(folder.iterdir())
        time.sleep(0.1)
    assert f"<{EX}initech>" in (folder / "answer.ttl").read_text()


@pytest.mark.servers("chromium")
def test_prefix_completion_declares_the_prefix(served: Served, page: Page) -> None:
    page.open(served.base + "/")
    page.type("#query", "SELECT ?c WHERE { ?c a sk")
    page.wait("!document.getElementById('complete').hidden")
    assert page.texts("#complete li")[0].startswith("skos:")
    page.key("Tab", "Tab", 9)
    text = page.js("document.getElementById('query').value")
    assert text == ("PREFIX skos: <http://www.w3.org/2004/02/skos/core#>\n"
                    "SELECT ?c WHERE { ?c a skos:")  # fmt: skip
    # The store's own prefixes need no declaration.
    page.type("#query", "SELECT ?p WHERE { ?p a rd")
    page.wait("!document.getElementById('complete').hidden")
    page.key("Enter", "Enter", 13)
    assert (
        page.js("document.getElementById('query').value")
        == "SELECT ?p WHERE { ?p a rdf:"
    )
    assert page.js("document.querySelectorAll('#highlight .tk-kw').length") >= 3


@pytest.mark.servers("chromium")
def test_a_syntax_error_is_one_line_marked_where_it_is(
    served: Served, page: Page, tmp_path: Path
) -> None:
    page.open(served.base + "/")
    page.type("#query", "SELECT ?s WHERE {\n  ?s ?p ?o .\n  ?s foo:bar ?o }")
    page.run()
    status = page.js("document.getElementById('status').textContent")
    assert status.startswith("ERR_QUERY: not valid SPARQL: error at 3:")
    assert "\n" not in status and "'\\u{" not in status and len(status) < 250
    assert page.js("document.getElementById('status').className") == "error"
    mark = page.js("document.querySelector('#highlight .tk-err').title")
    assert mark.startswith("line 3, column ")
    page.screenshot(artifacts(tmp_path) / "explorer-error.png")


@pytest.mark.servers("chromium")
def test_a_protected_server_takes_a_token_kept_in_the_session(
    protected: Served, page: Page, tmp_path: Path
) -> None:
    page.open(protected.base + "/")
    assert "needed" in page.js("document.getElementById('token-form').className")
    page.type("#query", WORKS)
    page.run()
    status = page.js("document.getElementById('status').textContent")
    assert status.startswith("ERR_INVALIDATION_DENIED") and "Enter a token" in status
    page.type("#token", SECRET)
    page.click("#token-form button[type=submit]")
    page.wait(
        "document.getElementById('token-state').textContent === 'token set for this tab'"
    )
    page.run()
    assert answer(page) == [f"{EX}initech"]
    assert page.js("sessionStorage.getItem('oms-rdf.token')") == SECRET
    assert page.js("localStorage.length") == 0 and SECRET not in page.js(
        "document.cookie"
    )
    assert page.js("document.getElementById('token').value") == ""
    page.screenshot(artifacts(tmp_path) / "explorer-token.png")
    page.click("#token-forget")
    assert page.js("sessionStorage.getItem('oms-rdf.token')") is None


@pytest.mark.servers("chromium")
def test_the_page_reached_nothing_but_its_server(
    served: Served, protected: Served, page: Page
) -> None:
    page.open(served.base + "/?query=" + quote(WORKS))
    page.wait("document.querySelectorAll('#results tbody td').length === 1")
    requested = page.requested()
    assert requested, "the page made no request"
    for url in requested:
        assert url.startswith(
            (served.base, protected.base, "about:", "blob:", "data:")
        ), url
