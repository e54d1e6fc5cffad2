"""The README's examples run, in order, and print what they say they print."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

README = Path(__file__).parent.parent / "README.md"
BLOCK = re.compile(r"```(python|pycon)\n(.*?)```", re.DOTALL)


def test_the_readme_examples_run_and_print_what_they_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the examples write files
    blocks = BLOCK.findall(README.read_text())
    assert sum(kind == "pycon" for kind, _ in blocks) >= 3
    namespace: dict[str, object] = {"__name__": "readme"}
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    for number, (kind, text) in enumerate(blocks):
        if kind == "pycon":
            test = parser.get_doctest(
                text, namespace, f"README block {number}", None, 0
            )
            runner.run(test, clear_globs=False)
            namespace.update(test.globs)  # a DocTest runs on a copy of its globals
        else:
            exec(compile(text, f"README block {number}", "exec"), namespace)
    failed, tried = runner.summarize(verbose=False)
    assert tried > 20 and failed == 0


def test_the_readme_code_fences_pair_up() -> None:
    """Each block opens with a fence naming at most a language and closes with a
    bare one, so no prose is swallowed into a block (nor code left out of one)."""
    open_at = None
    for number, line in enumerate(README.read_text().splitlines(), 1):
        if not line.startswith("```"):
            continue
        info = line[3:]
        if open_at is None:
            assert re.fullmatch(r"[a-z]*", info), f"line {number} opens with {line!r}"
            open_at = number
        else:
            assert info == "", (
                f"line {number} closes the block of line {open_at} with {line!r}"
            )
            open_at = None
    assert open_at is None, f"the block opened at line {open_at} never closes"
