"""On-disk imports end to end: the import, then the first command after it.

Run: python -m benchmarks.bench_import [N] [--against DIR] [--formats jsonl,nquads]

Each step runs in a fresh process, as a user's commands would: export N beliefs
as JSON Lines and as N-Quads, import each into a new on-disk store (timed), then
reopen the store and ask one ``beliefs(subject)`` (timed: a store left
uncompacted is compacted by RocksDB here, on the user's first command). The store's
size on disk is taken after each step. With ``--against DIR`` the same steps run
in the same session with the ``oms_rdf`` found in DIR (for example a
``git worktree`` of an earlier commit), which is the baseline of the ratios.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Written against the API every version has: GrainStore(path), put_many, export,
# import_ and beliefs; close() only where it exists.
_STEP = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import oms_rdf as oms
step, folder, fmt, n = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
start = time.perf_counter()
if step == "export":
    sys.path.insert(1, sys.argv[6])
    from benchmarks.data import beliefs
    store = oms.GrainStore()
    store.put_many(oms.Grain.from_dict(d) for d in beliefs(n))
    store.export(f"{folder}/source.{fmt}", format=fmt)
elif step == "import":
    store = oms.GrainStore(f"{folder}/store-{fmt}")
    store.import_(f"{folder}/source.{fmt}", format=fmt)
else:
    store = oms.GrainStore(f"{folder}/store-{fmt}")
    found = store.beliefs("person-17")
    assert found, "the imported store answers nothing"
getattr(store, "close", lambda: None)()
print(json.dumps(time.perf_counter() - start))
"""


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _step(code: Path, step: str, folder: Path, fmt: str, n: int) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _STEP, str(code), step, str(folder), fmt, str(n),
         str(ROOT)],
        check=True, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""},
    )  # fmt: skip
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def measure(code: Path, n: int, formats: list[str]) -> dict[str, dict[str, float]]:
    """Import, first command and sizes for each format, with the code in ``code``."""
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="oms-import-") as tmp:
        folder = Path(tmp)
        for fmt in formats:
            _step(code, "export", folder, fmt, n)
            imported = _step(code, "import", folder, fmt, n)
            after_import = _size(folder / f"store-{fmt}")
            first = _step(code, "first", folder, fmt, n)
            rows[fmt] = {
                "import_s": imported,
                "first_command_s": first,
                "ready_s": imported + first,
                "mb_after_import": after_import / 1e6,
                "mb_after_first": _size(folder / f"store-{fmt}") / 1e6,
            }
    return rows


def main() -> None:
    args = sys.argv[1:]
    against = None
    if "--against" in args:
        at = args.index("--against")
        against = Path(args[at + 1]).resolve()
        del args[at : at + 2]
    formats = ["jsonl", "nquads"]
    if "--formats" in args:
        at = args.index("--formats")
        formats = args[at + 1].split(",")
        del args[at : at + 2]
    n = int(args[0]) if args else 100_000
    ours = measure(ROOT, n, formats)
    base = measure(against, n, formats) if against is not None else None
    print(f"N = {n:,} beliefs, on-disk stores, each step in its own process")
    for fmt, row in ours.items():
        line = (
            f"{fmt:7} import {row['import_s']:6.1f} s ({n / row['import_s']:,.0f} grains/s)"
            f"  first command {row['first_command_s']:5.1f} s"
            f"  {row['mb_after_import']:5.0f} MB -> {row['mb_after_first']:5.0f} MB"
        )
        if base is not None:
            old = base[fmt]
            line += (
                f"  | baseline import {old['import_s']:6.1f} s, first command "
                f"{old['first_command_s']:5.1f} s, {old['mb_after_import']:5.0f} MB: "
                f"import {old['import_s'] / row['import_s']:.2f}x, "
                f"import to ready {old['ready_s'] / row['ready_s']:.2f}x faster"
            )
        print(line)


if __name__ == "__main__":
    main()
