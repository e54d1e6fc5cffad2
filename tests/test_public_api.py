"""Meta-tests: the exported API, the documented error codes, the tooling."""

from __future__ import annotations

import doctest
import importlib
import inspect
import io
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import oms_rdf
import oms_rdf as oms
from oms_rdf.errors import SPEC_CODES, ErrorCode, OmsError

ROOT = Path(__file__).parent.parent
MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(oms_rdf.__path__, "oms_rdf.")
    if m.name != "oms_rdf.__main__"
)


def test_all_is_sorted_and_complete() -> None:
    names = oms_rdf.__all__
    assert names == sorted(names)
    public = (
        {n for n in dir(oms_rdf) if not n.startswith("_")}
        - {m.rsplit(".", 1)[1] for m in MODULES}
        - {"annotations"}
    )
    assert public <= set(names) | {"__version__"}
    for name in names:
        assert hasattr(oms_rdf, name)


def test_error_codes_match_the_spec_table() -> None:
    spec = {
        "ERR_TOO_SHORT", "ERR_VERSION", "ERR_CORRUPT", "ERR_NOT_MAP", "ERR_NO_TYPE",
        "ERR_UNKNOWN_TYPE", "ERR_SCHEMA", "ERR_INTEGRITY", "ERR_HASH_FORMAT",
        "ERR_HASH_LENGTH", "ERR_RANGE", "ERR_EMPTY", "ERR_FLOAT_INVALID",
        "ERR_SIGNED_MISMATCH", "ERR_SENSITIVITY_MISMATCH", "ERR_INVALIDATION_DENIED",
        "ERR_EVIDENCE_REQUIRED",
    }  # fmt: skip
    assert {str(c) for c in SPEC_CODES} == spec


def test_every_error_code_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    documented = set(re.findall(r"`(ERR_[A-Z_]+)`", readme))
    assert documented == {str(c) for c in ErrorCode}


def test_every_cli_command_is_in_the_readme_with_help() -> None:
    from oms_rdf.cli import cli

    readme = (ROOT / "README.md").read_text()
    for name, command in cli.commands.items():
        assert re.search(rf"oms-rdf (--store DIR )?{name}\b", readme), name
        assert command.help, name


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    command = next(
        line
        for line in readme.splitlines()
        if line.startswith("python3 -m venv") and "pytest" in line
    )
    assert command in (ROOT / ".ci" / "run").read_text()


def test_errors_pickle_and_keep_code() -> None:
    import pickle

    err = oms_rdf.DecodeError("x", code=ErrorCode.VERSION, path="header[0]")
    again = pickle.loads(pickle.dumps(err))
    assert (type(again), again.code, again.path, str(again)) == (
        oms_rdf.DecodeError,
        ErrorCode.VERSION,
        "header[0]",
        str(err),
    )
    assert isinstance(err, ValueError) and isinstance(err, OmsError)
    assert str(oms_rdf.NotFoundError("no grain abc")) == "ERR_NOT_FOUND: no grain abc"


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(
        importlib.import_module(module), optionflags=doctest.ELLIPSIS
    )
    assert result.failed == 0


def test_package_doctest() -> None:
    assert doctest.testmod(oms_rdf).failed == 0


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"{name} is not installed; install the [test] extra")
    return found


def test_ruff_is_clean() -> None:
    for args in (
        ["check", "oms_rdf", "tests"],
        ["format", "--check", "oms_rdf", "tests"],
    ):
        result = subprocess.run(
            [_tool("ruff"), *args], cwd=ROOT, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean() -> None:
    result = subprocess.run(
        [_tool("mypy"), "oms_rdf"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_bad_arguments_are_value_errors_with_the_spec_code() -> None:
    """A caller's mistake is an OmsError and a ValueError, whatever it concerns."""
    store = oms.GrainStore()
    grain = store.put(oms.Belief("alice", "likes", "tea", 0.6, created_at=1))
    mistakes = {
        "status": lambda: store.beliefs_by_status("archived"),
        "verification": lambda: store.set_verification(grain, "probably"),
        "evidence kind": lambda: store.evidence(grain, "neutral"),
        "strength": lambda: store.evidence(grain, "supporting", 0.2),
        "format": lambda: store.export(io.BytesIO(), format="xlsx"),
        "snapshot of grains": lambda: store.export(
            io.BytesIO(), format="jsonl", valid_at=1
        ),
        "time": lambda: store.beliefs("alice", valid_at="yesterday"),
        "empty portion": lambda: store.retract(
            grain, reason="wrong", valid_from=5, valid_to=5
        ),
        "portion outside": lambda: store.retract(
            grain, reason="wrong", valid_from=0, valid_to=1
        ),
        "time before the grain": lambda: store.retract(grain, reason="wrong", at=0),
    }
    for what, mistake in mistakes.items():
        with pytest.raises(ValueError) as info:
            mistake()
        assert isinstance(info.value, oms.OmsError), what
        assert info.value.code in (oms.ErrorCode.SCHEMA, oms.ErrorCode.RANGE), what


def test_the_store_holds_its_parts() -> None:
    from oms_rdf.store.delegate import Delegated

    assert oms.GrainStore.__mro__ == (oms.GrainStore, object)
    store = oms.GrainStore(clock=lambda: 5)
    delegated = {
        name: value
        for name, value in vars(oms.GrainStore).items()
        if isinstance(value, Delegated)
    }
    assert {"put", "beliefs", "supersede", "evidence", "get", "bulk"} <= set(delegated)
    for name, method in delegated.items():
        part = getattr(store, method.part)
        assert getattr(store, name) == getattr(part, name), name
        assert inspect.signature(getattr(store, name)) == inspect.signature(
            getattr(part, name)
        ), name
        assert method.__doc__ and method.__doc__ == getattr(part, name).__doc__, name
    address = oms.GrainStore.put(store, oms.Belief("a", "r", "o", 0.5, created_at=1))
    assert [g.address for g in oms.GrainStore.beliefs(store, "a")] == [address]
