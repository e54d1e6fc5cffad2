"""The benchmark suite: every hot path against its baseline, measured in the same run.

Run from the repository root (after `pip install -e '.[test]'`):

    python -m benchmarks.run                 # 100k beliefs
    python -m benchmarks.run --size 10k      # quick
    python -m benchmarks.run --size 1m       # opt-in: the 1M-belief query rows
    python -m benchmarks.run --json results.json

Each row is the median of --runs repetitions; the ratio is ours / baseline.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import io
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import msgpack
import pyoxigraph as ox

import oms_rdf as oms
from benchmarks.bench_peers import each
from benchmarks.data import BASE_MS, beliefs
from oms_rdf.codec.encoding import _compact, encode_fields
from oms_rdf.codec.schema import BELIEF

SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
PREFIX = "PREFIX oms: <https://w3id.org/oms-rdf/ns#>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"


@dataclass
class Row:
    path: str
    ours: float
    baseline: float | None
    unit: str
    target: str
    ok: bool | None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return None if not self.baseline else self.ours / self.baseline


def median(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def history_store(n: int, seed: int = 11) -> tuple[oms.GrainStore, list[str]]:
    """N beliefs in two namespaces, then supersession chains (10%) and retractions (2%)."""
    rng = random.Random(seed)
    store = oms.GrainStore(clock=lambda: BASE_MS + n * 120_000)
    addresses = store.put_many(oms.Grain.from_dict(d) for d in beliefs(n))
    for address in rng.sample(addresses, n // 10):
        old = store.get(address)
        new = {**old.to_dict(), "object": "changed", "confidence": 0.9,
               "created_at": old.created_at + 30_000, "valid_from": old.created_at + 20_000}  # fmt: skip
        new.pop("derived_from", None)
        store.supersede(old, new)
    for address in rng.sample(addresses, n // 50):
        if store.status(address).is_current:
            store.retract(address, reason="benchmark", at=BASE_MS + n * 90_000)
    return store, addresses


def codec_rows(n: int, runs: int) -> list[Row]:
    data = beliefs(n)
    ready = [_compact(encode_fields(d)[1], BELIEF.table) for d in data]
    blobs = [oms.encode(d) for d in data]
    payloads = [b[9:] for b in blobs]
    addresses = [oms.content_address(b) for b in blobs]

    def base_encode() -> None:
        for w in ready:
            hashlib.sha256(msgpack.packb(w, use_bin_type=True)).hexdigest()

    def ours_encode() -> None:
        for d in data:
            oms.content_address(oms.encode(d))

    def base_decode() -> None:
        for p in payloads:
            msgpack.unpackb(p, raw=False)
            hashlib.sha256(p).hexdigest()

    def ours_decode() -> None:
        for b, a in zip(blobs, addresses, strict=True):
            oms.decode(b)
            oms.verify(b, a)

    short = {f.full: f.short for f in BELIEF.table.fields}

    def floor_encode() -> None:
        # The least any canonical encoder written in Python must do: visit each
        # field once (its short key, its type), sort the keys, pack, hash.
        for d in data:
            out = {}
            for k, v in d.items():
                out[short.get(k, k)] = v if type(v) is not float else float(v)
            hashlib.sha256(
                msgpack.packb(dict(sorted(out.items())), use_bin_type=True)
            ).hexdigest()

    full = {f.short: f.full for f in BELIEF.table.fields}

    def floor_decode() -> None:
        # The least any canonical decoder written in Python must do: unpack, prove
        # the bytes canonical (repack and compare), give the fields their full
        # names, hash.
        for b, p in zip(blobs, payloads, strict=True):
            w = msgpack.unpackb(p, raw=False)
            if msgpack.packb(w, use_bin_type=True) != p:
                raise AssertionError("not canonical")
            {full[k]: v for k, v in w.items()}
            hashlib.sha256(b).hexdigest()

    rows = []
    for name, ours, base in (("encode + content_address", ours_encode, base_encode),
                             ("decode + verify", ours_decode, base_decode)):  # fmt: skip
        o, b = median(ours, runs), median(base, runs)
        rows.append(Row(f"{name} ({n:,})", o, b, "s", "<= 2.0x", o / b <= 2.0))
    f, b = median(floor_encode, runs), median(base_encode, runs)
    rows.insert(1, Row(f"  floor: one Python pass per field ({n:,})", f, b, "s", "(reference)", None,
                       "the encode target's limit in CPython"))  # fmt: skip
    f, b = median(floor_decode, runs), median(base_decode, runs)
    rows.append(Row(f"  floor: repack, rename, hash ({n:,})", f, b, "s", "(reference)", None,
                    "the decode target's limit in CPython"))  # fmt: skip
    return rows


def put_rows(n: int, runs: int) -> list[Row]:
    grains = [oms.Grain.from_dict(d) for d in beliefs(n)]
    probe = oms.GrainStore()
    probe.put_many(grains)
    nquads = ox.serialize(probe.backend.quads(), format=ox.RdfFormat.N_QUADS)
    del probe
    rows = []
    ours = median(lambda: oms.GrainStore().put_many(grains), runs)
    base = median(lambda: ox.Store().load(nquads, format=ox.RdfFormat.N_QUADS), runs)
    rows.append(Row(f"put_many in memory ({n:,})", ours, base, "s", "<= 2.0x", ours / base <= 2.0,
                    "baseline Store().load of the same quads as N-Quads"))  # fmt: skip
    per_belief = nquads.count(b"\n") / n
    rows.append(Row(f"quads per belief ({n:,})", per_belief, None, "quads", "<= 14", per_belief <= 14,
                    "grain node, blob, knowledge triple, put_many's audit event"))  # fmt: skip

    def on_disk(fn: Callable[[Path], object]) -> Callable[[], None]:
        def run() -> None:
            with tempfile.TemporaryDirectory() as tmp:
                fn(Path(tmp) / "db")

        return run

    ours = median(on_disk(lambda p: oms.GrainStore(p).put_many(grains)), runs)
    base = median(
        on_disk(
            lambda p: ox.Store(str(p)).bulk_load(nquads, format=ox.RdfFormat.N_QUADS)
        ),
        runs,
    )
    rows.append(Row(f"put_many on disk ({n:,})", ours, base, "s", "<= 2.0x", ours / base <= 2.0,
                    "baseline Store(path).bulk_load of the same bytes"))  # fmt: skip
    return rows


def write_rate_rows(store: oms.GrainStore, addresses: list[str], n: int) -> list[Row]:
    count = 2000
    extra = beliefs(count, seed=99)
    start = time.perf_counter()
    for fields in extra:
        store.put({**fields, "created_at": fields["created_at"] + n * 200_000})
    put_rate = count / (time.perf_counter() - start)
    current = [a for a in addresses[-count * 3 :] if store.status(a).is_current][:count]
    start = time.perf_counter()
    for address in current:
        old = store.get(address)
        new = {
            **old.to_dict(),
            "object": "revised",
            "created_at": old.created_at + 40_000,
        }
        new.pop("derived_from", None)
        store.supersede(old, new)
    supersede_rate = len(current) / (time.perf_counter() - start)
    return [
        Row(
            f"single put ({n:,} store)",
            put_rate,
            None,
            "ops/s",
            ">= 5,000",
            put_rate >= 5000,
        ),
        Row(
            f"supersede + policy ({n:,} store)",
            supersede_rate,
            None,
            "ops/s",
            ">= 2,000",
            supersede_rate >= 2000,
        ),
    ]


def query_rows(store: oms.GrainStore, addresses: list[str], n: int) -> list[Row]:
    rng = random.Random(5)
    subjects = [f"person-{rng.randrange(max(1, n // 10))}" for _ in range(200)]
    valid_at, as_of = BASE_MS + n * 20_000, BASE_MS + n * 40_000
    # The hand-written baseline: one SPARQL query answering the same question,
    # constants inline, returning what the API returns (the grains' blobs).
    hand_beliefs = (
        PREFIX
        + """SELECT ?g ?blob WHERE {
      ?g oms:subjectText "%s" ; oms:validFrom ?vf ; oms:systemFrom ?sf ; oms:confidence ?c .
      FILTER (?sf <= "%s"^^xsd:dateTime && ?vf <= "%s"^^xsd:dateTime)
      OPTIONAL { ?g oms:validTo ?vt } FILTER (!BOUND(?vt) || "%s"^^xsd:dateTime < ?vt)
      FILTER NOT EXISTS { GRAPH oms:index { ?g oms:voidedAt ?void } FILTER (?void <= "%s"^^xsd:dateTime) }
      OPTIONAL { GRAPH oms:index { ?g oms:systemTo ?st } }
      OPTIONAL { GRAPH oms:index { ?g oms:supersededBy ?n } ?n oms:validFrom ?nf }
      FILTER (!BOUND(?st) || "%s"^^xsd:dateTime < ?st || (BOUND(?nf) && "%s"^^xsd:dateTime < ?nf))
      OPTIONAL { GRAPH oms:index { ?g oms:effectiveConfidence ?e } }
      OPTIONAL { GRAPH oms:blobs { ?g oms:blob ?blob } }
    } ORDER BY DESC(COALESCE(?e, ?c))"""
    )
    now = oms.rdf.mapping.millis_literal(store.clock()).value
    x, t = (
        oms.rdf.mapping.millis_literal(valid_at).value,
        oms.rdf.mapping.millis_literal(as_of).value,
    )
    hand_history = (
        PREFIX
        + """SELECT ?g ?blob WHERE {
      GRAPH oms:index { <nih:sha-256;%s> ^oms:supersededBy* ?root .
                        FILTER NOT EXISTS { ?e oms:supersededBy ?root } ?root oms:supersededBy* ?g }
      OPTIONAL { GRAPH oms:blobs { ?g oms:blob ?blob } } }"""
    )

    raw = store.backend.query
    cases = [
        ("beliefs(subject)", lambda s: store.beliefs(s),
         lambda s: list(raw(hand_beliefs % (s, now, now, now, now, now, now))), subjects),
        ("bi-temporal point query", lambda s: store.beliefs(s, valid_at=valid_at, as_of=as_of),
         lambda s: list(raw(hand_beliefs % (s, t, x, x, t, t, x))), subjects),
        ("history", lambda a: store.history(a), lambda a: list(raw(hand_history % a)), addresses[:200]),
    ]  # fmt: skip
    rows = []
    for name, ours, base, keys in cases:
        for key in keys[:20]:  # warm both
            ours(key)
            base(key)
        o, b = each(ours, keys), each(base, keys)
        ok = o / b <= 1.2 and o <= 0.002
        rows.append(
            Row(
                f"{name} ({n:,} store)",
                o * 1000,
                b * 1000,
                "ms",
                "<= 1.2x and <= 2 ms",
                ok,
            )
        )
    return rows


def search_rows(store: oms.GrainStore, n: int) -> list[Row]:
    """Recall: a ranked search, once the index is built (its build time reported too)."""
    start = time.perf_counter()
    store.search("warm up the index")
    build = time.perf_counter() - start
    rng = random.Random(3)
    words = ["works_at", "Berlin", "dark mode", "Acme Corp", "Project Alpha", "German"]
    queries = [
        f"person-{rng.randrange(max(1, n // 10))} {rng.choice(words)}"
        for _ in range(200)
    ]
    times = _time_each(lambda q: store.search(q), queries)
    return [
        Row(f"search, median ({n:,} store)", statistics.median(times) * 1000, None, "ms",
            "<= 20 ms", statistics.median(times) <= 0.020, "BM25 over subject, relation, object"),
        Row("  building the index (first search)", build, None, "s", "(reference)", None),
    ]  # fmt: skip


def snapshot_rows(store: oms.GrainStore, n: int, runs: int) -> list[Row]:
    """Count of beliefs valid at X known at T, against plain s p o + time literals."""
    plain = ox.Store()
    ex = "https://example.org/"
    quads = []
    for q in store.backend.quads(
        None, oms.rdf.vocab.RDF.subject, None, ox.DefaultGraph()
    ):
        g = q.subject
        address = g.value.removeprefix("nih:sha-256;")
        grain, state = store.get(address), store.status(address)
        b = ox.NamedNode(f"{ex}b/{address}")
        f = grain.fields
        vf = f.get("valid_from", f.get("system_valid_from", grain.created_at))
        quads += [
            ox.Quad(b, ox.NamedNode(ex + "s"), ox.Literal(f["subject"])),
            ox.Quad(b, ox.NamedNode(ex + "p"), ox.Literal(f["relation"])),
            ox.Quad(b, ox.NamedNode(ex + "o"), ox.Literal(str(f["object"]))),
            ox.Quad(b, ox.NamedNode(ex + "vf"), oms.rdf.mapping.millis_literal(vf)),
            ox.Quad(b, ox.NamedNode(ex + "sf"), oms.rdf.mapping.millis_literal(f.get("system_valid_from", grain.created_at))),
        ]  # fmt: skip
        if "valid_to" in f:
            quads.append(
                ox.Quad(
                    b,
                    ox.NamedNode(ex + "vt"),
                    oms.rdf.mapping.millis_literal(f["valid_to"]),
                )
            )
        if state.system_to is not None:
            quads.append(
                ox.Quad(
                    b,
                    ox.NamedNode(ex + "st"),
                    oms.rdf.mapping.millis_literal(state.system_to),
                )
            )
    plain.extend(quads)
    x = oms.rdf.mapping.millis_literal(BASE_MS + n * 20_000).value
    t = oms.rdf.mapping.millis_literal(BASE_MS + n * 40_000).value
    base_query = f"""PREFIX ex: <{ex}> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
    SELECT (COUNT(?b) AS ?n) WHERE {{ ?b ex:vf ?vf ; ex:sf ?sf .
      FILTER (?sf <= "{t}"^^xsd:dateTime && ?vf <= "{x}"^^xsd:dateTime)
      OPTIONAL {{ ?b ex:vt ?vt }} FILTER (!BOUND(?vt) || "{x}"^^xsd:dateTime < ?vt)
      OPTIONAL {{ ?b ex:st ?st }} FILTER (!BOUND(?st) || "{t}"^^xsd:dateTime < ?st) }}"""
    # The baseline's own query (validity and one system end) over our store: what
    # the same patterns cost where each grain node carries ~20 other triples.
    same_shape = f"""PREFIX oms: <https://w3id.org/oms-rdf/ns#> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
    SELECT (COUNT(?b) AS ?n) WHERE {{ ?b oms:validFrom ?vf ; oms:systemFrom ?sf .
      FILTER (?sf <= "{t}"^^xsd:dateTime && ?vf <= "{x}"^^xsd:dateTime)
      OPTIONAL {{ ?b oms:validTo ?vt }} FILTER (!BOUND(?vt) || "{x}"^^xsd:dateTime < ?vt)
      OPTIONAL {{ GRAPH oms:index {{ ?b oms:systemTo ?st }} }} FILTER (!BOUND(?st) || "{t}"^^xsd:dateTime < ?st) }}"""
    point = {"valid_at": BASE_MS + n * 20_000, "as_of": BASE_MS + n * 40_000}
    ours = median(lambda: store.count_beliefs(**point), runs)
    base = median(lambda: list(plain.query(base_query)), runs)
    shape = median(lambda: list(store.backend.query(same_shape)), runs)
    # A process that asks more than one question at a point reads the interval
    # layer once: read here, before the timing.
    store.core.intervals.read_at_question = 1
    count_all = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
    list(store.query(count_all, **point))
    travel = median(lambda: list(store.query(count_all, **point)), runs)  # type: ignore[arg-type]
    return [Row(f"as-of snapshot count ({n:,})", ours, base, "s", "<= 1.5x", ours / base <= 1.5,
                "baseline: plain s p o nodes with time literals"),
            Row(f"time-travel SPARQL, COUNT ({n:,})", travel, base, "s", "<= 2.0x", travel / base <= 2.0,
                "store.query(valid_at, as_of), of the interval layer"),
            Row("  the baseline's query over our store", shape, base, "s", "(reference)", None,
                "same patterns, grain nodes of ~12 triples")]  # fmt: skip


def trig_rows(store: oms.GrainStore, n: int, runs: int) -> list[Row]:
    data = io.BytesIO()
    store.export(data, format="trig")
    payload = data.getvalue()
    ours_export = median(lambda: store.export(io.BytesIO(), format="trig"), runs)
    base_export = median(
        lambda: store.backend.dump(io.BytesIO(), ox.RdfFormat.TRIG), runs
    )
    ours_import = median(
        lambda: oms.GrainStore().import_(io.BytesIO(payload), format="trig"), runs
    )
    base_import = median(
        lambda: ox.Store().load(payload, format=ox.RdfFormat.TRIG), runs
    )
    return [
        Row(
            f"TriG export ({n:,})",
            ours_export,
            base_export,
            "s",
            "<= 1.5x",
            ours_export / base_export <= 1.5,
        ),
        Row(
            f"TriG import ({n:,})",
            ours_import,
            base_import,
            "s",
            "<= 2.0x",
            ours_import / base_import <= 2.0,
        ),
    ]


def adoption_rows(runs: int) -> list[Row]:
    """Adopting a published vocabulary (schema.org, shipped in pyshacl) against loading it."""
    import pyshacl

    path = Path(pyshacl.__file__).parent / "assets" / "schema.ttl"
    probe = oms.GrainStore()
    report = probe.import_(path)
    ours_quads = ox.serialize(probe.backend.quads(), format=ox.RdfFormat.N_QUADS)
    ours = median(lambda: oms.GrainStore().import_(path), runs)
    base = median(lambda: ox.Store().load(path=path), runs)
    floor = median(
        lambda: ox.Store().load(ours_quads, format=ox.RdfFormat.N_QUADS), runs
    )
    again = median(lambda: probe.import_(path), runs)
    return [
        Row(f"adopt schema.org ({report.added:,} triples)", ours, base, "s", "<= 20x", ours / base <= 20,
            "baseline Store().load of the same file"),
        Row("  pyoxigraph's load of the quads we write", floor, base, "s", "(reference)", None,
            "the layout's floor: ~14 quads per source triple"),
        Row("  adopting it again (all already believed)", again, base, "s", "(reference)", None,
            "adds nothing"),
    ]  # fmt: skip


def update_rows(n: int) -> list[Row]:
    """SPARQL Update against importing the same triples (``bench_update``)."""
    from benchmarks.bench_update import run

    t = run(n)
    return [
        Row(f"INSERT DATA of {n:,} triples", t["update"], t["import"], "s", "<= 2x",
            t["update"] / t["import"] <= 2, "baseline: import_ of the same N-Triples"),
        Row(f"DELETE DATA of {n:,} triples", t["delete"], t["import"], "s", "<= 2x",
            t["delete"] / t["import"] <= 2, "each a retraction under the policies"),
    ]  # fmt: skip


def quad_memory_row(n: int) -> Row:
    """Bytes per quad in a plain in-memory pyoxigraph store: the floor under a belief."""
    code = (
        "import gc,os;import pyoxigraph as ox;"
        "rss=lambda: int(open('/proc/self/statm').read().split()[1])*os.sysconf('SC_PAGE_SIZE');"
        f"data=''.join(f'<https://e.org/s{{i}}> <https://e.org/p{{i%20}}> \"v{{i}}\" .\\n' for i in range({n * 20}));"
        "gc.collect();a=rss();s=ox.Store();s.load(data,format=ox.RdfFormat.N_TRIPLES);del data;gc.collect();"
        "print(rss()-a, len(s))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    grown, count = (int(x) for x in out.stdout.split())
    return Row("  pyoxigraph alone, per quad", grown / count, None, "B/quad", "(reference)", None,
               "a belief maps to ~14 quads")  # fmt: skip


def memory_rows(n: int) -> list[Row]:
    """Bytes per belief held in memory, and the process's peak, in a fresh process."""
    # Written in chunks of 100k, so that the peak is the store's, not one huge batch's;
    # the cache of decoded grains is emptied, so that what is counted is the store.
    code = (
        "import gc,os,resource;from benchmarks.data import beliefs;import oms_rdf as oms;"
        "rss=lambda: int(open('/proc/self/statm').read().split()[1])*os.sysconf('SC_PAGE_SIZE');"
        f"data=beliefs({n});s=oms.GrainStore();gc.collect();a=rss();"
        f"[s.put_many(oms.Grain.from_dict(d) for d in data[i:i+100_000]) for i in range(0,{n},100_000)];"
        "s.core._cache.clear();gc.collect();"
        "print(rss()-a, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss*1024)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    held, peak = (int(x) / n for x in out.stdout.split())
    return [
        Row(f"RSS holding {n:,} beliefs", held, None, "B/belief", "<= 5,120", held <= 5120),
        Row("  peak RSS of that process", peak, None, "B/belief", "(reference)", None,
            "includes the input data and each chunk's load"),
    ]  # fmt: skip


def areev_rows(n: int) -> list[Row]:
    try:
        import areev  # type: ignore[import-not-found]
    except ImportError:
        return []
    data = beliefs(n)
    with tempfile.TemporaryDirectory() as tmp:
        db = areev.Areev(str(Path(tmp) / "a.db"))
        batch = json.dumps(
            [
                {
                    "grain_type": "fact",
                    "fields": {k: v for k, v in d.items() if k != "type"},
                }
                for d in data
            ]
        )
        start = time.perf_counter()
        db.add_batch(batch)
        theirs = time.perf_counter() - start
        start = time.perf_counter()
        probe = oms.GrainStore()
        probe.put_many(oms.Grain.from_dict(d) for d in data)
        ours = time.perf_counter() - start
        nquads = ox.serialize(probe.backend.quads(), format=ox.RdfFormat.N_QUADS)
        del probe
        start = time.perf_counter()
        ox.Store().load(nquads, format=ox.RdfFormat.N_QUADS)
        raw_load = time.perf_counter() - start
        keys = [(d["subject"], d["relation"], d["namespace"]) for d in data[:200]]
        assert all(db.latest(*k) is not None for k in keys)  # a real answer, not None
        lookup_theirs = statistics.median(_time_each(lambda k: db.latest(*k), keys))
    store = oms.GrainStore()
    store.put_many(oms.Grain.from_dict(d) for d in data)
    lookup_ours = statistics.median(
        _time_each(lambda k: store.beliefs(k[0], k[1], namespace=k[2]), keys)
    )
    raw, default = store.backend.store, ox.DefaultGraph()
    subject_text, predicate = oms.rdf.vocab.OMS.subjectText, oms.rdf.vocab.RDF.predicate

    def least_lookup(key: tuple[str, str, str]) -> None:
        # The pattern calls any answer from this RDF layout needs: the subject's
        # grains, one relation check each, then the winner's quads.
        winner = None
        relation = oms.rdf.mapping.relation_iri(key[1])
        for q in raw.quads_for_pattern(None, subject_text, ox.Literal(key[0]), default):
            if next(
                raw.quads_for_pattern(q.subject, predicate, relation, default), None
            ):
                winner = q.subject
        list(raw.quads_for_pattern(winner, None, None, None))

    lookup_floor = statistics.median(_time_each(least_lookup, keys))
    return [
        Row(f"write {n:,} (areev add_batch)", theirs / ours, None, "x faster", ">= 10x", theirs / ours >= 10,
            f"ours {ours:.2f} s, areev {theirs:.2f} s"),
        Row("  pyoxigraph's own load of our quads", theirs / raw_load, None, "x faster", "(reference)", None,
            f"Store().load {raw_load:.2f} s: the ceiling for any writer of this layout"),
        Row("current-value lookup (areev latest)", lookup_ours * 1000, lookup_theirs * 1000, "ms", "<= 1.0x",
            lookup_ours <= lookup_theirs),
        Row("  floor: the pattern calls alone", lookup_floor * 1000, lookup_theirs * 1000, "ms", "(reference)", None,
            "raw pyoxigraph lookups, no Python logic"),
    ]  # fmt: skip


def _time_each(fn: Callable[[Any], object], keys: list[Any]) -> list[float]:
    times = []
    for key in keys:
        start = time.perf_counter()
        fn(key)
        times.append(time.perf_counter() - start)
    return times


def machine() -> str:
    return (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"pyoxigraph {ox.__version__}, oms_rdf {oms.__version__}")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", choices=list(SIZES), default="100k")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the rows as JSON here")
    args = parser.parse_args(argv)
    n = SIZES[args.size]
    small = min(n, 100_000)
    started = time.perf_counter()
    rows = (
        codec_rows(small, args.runs)
        + put_rows(small, args.runs)
        + adoption_rows(args.runs)
        + update_rows(min(small, 10_000))
    )
    rows += [*memory_rows(n), quad_memory_row(small)]  # before this process grows
    store, addresses = history_store(n)
    rows += query_rows(store, addresses, n)
    rows += search_rows(store, n)
    rows += snapshot_rows(store, n, args.runs) if n <= 100_000 else []
    rows += trig_rows(store, n, args.runs) if n <= 100_000 else []
    rows += write_rate_rows(store, addresses, n)
    rows += areev_rows(small)
    elapsed = time.perf_counter() - started
    print(
        f"\n{machine()}; N = {n:,}; median of {args.runs} runs; {elapsed:.0f} s in all\n"
    )
    print(
        f"{'path':42} {'ours':>11} {'baseline':>11} {'unit':>8} {'ratio':>7}  {'target':22} ok"
    )
    for r in rows:
        base = "" if r.baseline is None else f"{r.baseline:11.3f}"
        ratio = "" if r.ratio is None else f"{r.ratio:6.2f}x"
        mark = {True: "yes", False: "NO", None: ""}[r.ok]
        print(
            f"{r.path:42} {r.ours:11.3f} {base:>11} {r.unit:>8} {ratio:>7}  {r.target:22} {mark}"
        )
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "size": n, "runs": args.runs,
                                         "rows": [{**asdict(r), "ratio": r.ratio} for r in rows]}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
