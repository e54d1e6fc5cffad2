"""The test tiers (README: "Two commands"): plain pytest runs the default tier; a
test of the servers tier whose system package is missing is skipped with the
package's name, and fails under CI=true."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
CHROMIUM = "tests/test_server.py::test_the_page_runs_a_query_in_headless_chromium"


def pytest_run(*args: str, ci: bool = False) -> subprocess.CompletedProcess[str]:
    """pytest in a child whose PATH holds only this venv's programs: no chromium.

    The child only selects tests (and skips or fails the one it runs at its
    setup): no plugin of the venv is loaded in it (their imports are most of its
    start), nor coverage, but xdist, whose --dist the addopts name."""
    skip = ("CI", "COVERAGE_PROCESS_CONFIG")
    env = {k: v for k, v in os.environ.items() if k not in skip}
    env["PATH"] = str(Path(sys.executable).parent)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "xdist.plugin", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_missing_system_package_skips_with_its_name() -> None:
    result = pytest_run("-m", "servers", "-rs", CHROMIUM)  # selected, then skipped
    assert result.returncode == 0, result.stdout[-2000:]
    assert "1 skipped" in result.stdout
    assert "needs Debian's chromium" in result.stdout
    assert "apt-get install chromium" in result.stdout


def test_under_ci_a_missing_system_package_fails() -> None:
    result = pytest_run("-m", "servers", CHROMIUM, ci=True)
    assert result.returncode == 1, result.stdout[-2000:]
    assert "CI=true and needs Debian's chromium" in result.stdout
    assert "skipped" not in result.stdout


MANIFEST = (
    "tests/test_container.py::"
    "test_an_800k_entry_manifest_is_written_and_read_an_entry_at_a_time"
)


def collected(*args: str) -> set[str]:
    result = pytest_run("--collect-only", *args, MANIFEST, CHROMIUM)
    assert result.returncode in (0, 5), result.stdout[-2000:]  # 5: none selected
    return {line for line in result.stdout.splitlines() if "::" in line}


def test_plain_pytest_leaves_out_the_servers_and_soak_tiers() -> None:
    assert collected() == set()
    assert collected("-m", "") == {MANIFEST, CHROMIUM}  # both there, both left out
