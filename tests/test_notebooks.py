"""The notebooks run top to bottom on the shipped sample, and are stored without outputs."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
ROOT = Path(__file__).parent.parent


def test_there_are_notebooks() -> None:
    assert len(NOTEBOOKS) >= 2


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.filterwarnings(
    "ignore::DeprecationWarning"
)  # jupyter_client/zmq internals
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path: Path) -> None:
    import nbclient
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # raises CellExecutionError on any error
    errors = [
        o
        for c in notebook.cells
        for o in c.get("outputs", [])
        if o.output_type == "error"
    ]
    assert not errors
    # Wide tables are shown whole: pandas cuts no column ("...") and no cell.
    tables = [
        o["data"]["text/html"]
        for c in notebook.cells
        for o in c.get("outputs", [])
        if "text/html" in o.get("data", {})
    ]
    for table in tables:
        assert "<th>...</th>" not in table and "...</td>" not in table, table[:400]
    images = [
        o
        for c in notebook.cells
        for o in c.get("outputs", [])
        if "image/png" in o.get("data", {})
    ]
    if path.name.startswith("02"):
        assert len(images) >= 3  # timeline, entity graph, confidence
    for image in images:  # every figure says in words what it shows
        assert image.get("metadata", {}).get("image/png", {}).get("alt", "").strip()


def test_the_notebooks_extra_gives_a_working_jupyter_lab() -> None:
    import shutil
    import subprocess
    import sys

    jupyter = shutil.which("jupyter", path=str(Path(sys.executable).parent))
    assert jupyter is not None, "install the [notebooks] extra"
    done = subprocess.run(
        [jupyter, "lab", "--version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip()[0].isdigit()


def test_sample_data_is_what_the_script_makes() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_sample", ROOT / "scripts" / "make_sample.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    store = module.build(random.Random(module.SEED))
    out = io.BytesIO()
    store.export(out, format="mg")
    assert out.getvalue() == (ROOT / "notebooks" / "data" / "sample.mg").read_bytes()
    assert len(store) > 2000
    kinds = {store.status(a).status for a in list(_addresses(store))}
    assert {"active", "superseded", "retracted"} <= kinds


def _addresses(store: object) -> list[str]:
    from oms_rdf.rdf.vocab import OMS

    return [
        q.subject.value.removeprefix("nih:sha-256;")
        for q in store.backend.quads(None, OMS.blob, None, OMS.blobs)
    ]  # type: ignore[attr-defined]
