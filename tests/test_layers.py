"""The house rules that keep the tree readable: layers, private names, sizes.

- imports flow one way, from the top layer down (the import-linter contract in
  pyproject.toml, run with ``lint-imports``);
- no underscore name is imported from another module;
- no module is over 600 lines, no function over 60 lines of code (docstring,
  comments and blank lines left out).
"""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "oms_rdf"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_imports_flow_one_way() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True
    )
    broken = result.stdout[result.stdout.find("Broken contracts") :]
    assert result.returncode == 0, broken or result.stdout + result.stderr


def private_imports(path: Path) -> list[str]:
    """The ``from X import _y`` of a module (dunder names are not private)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                name = alias.name
                if name.startswith("_") and not name.startswith("__"):
                    module = "." * node.level + (node.module or "")
                    found.append(f"{path}:{node.lineno} from {module} import {name}")
    return found


def test_no_private_name_crosses_a_module_boundary() -> None:
    found = [line for path in _sources() for line in private_imports(path)]
    assert not found, "\n".join(found)


def test_private_imports_are_found(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from .protocol import _WHERE, SparqlBackend\nfrom x import __all__\n",
        encoding="utf-8",
    )
    assert private_imports(probe) == [f"{probe}:1 from .protocol import _WHERE"]


def code_rows(source: str) -> set[int]:
    """The rows of a source that hold a token of code (no comment, no blank)."""
    skipped = {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
    return {
        token.start[0]
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type not in skipped
    }


def code_lines(
    source: str,
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    rows: set[int] | None = None,
) -> int:
    """The lines of a function that hold code: no docstring, comment or blank.

    ``rows``: the source's :func:`code_rows`, when the caller has them already
    (tokenizing a module once serves all its functions).
    """
    body = node.body
    doc = None
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        doc = (first.lineno, first.end_lineno or first.lineno)
    if rows is None:
        rows = code_rows(source)
    end = node.end_lineno or node.lineno
    return sum(
        1
        for row in range(node.lineno, end + 1)
        if row in rows and not (doc is not None and doc[0] <= row <= doc[1])
    )


def oversized(path: Path) -> list[str]:
    """The module, if it is too long, and its functions that are."""
    source = path.read_text(encoding="utf-8")
    found = []
    count = len(source.splitlines())
    if count > MAX_MODULE_LINES:
        found.append(f"{path}: {count} lines")
    rows = code_rows(source)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            size = code_lines(source, node, rows)
            if size > MAX_FUNCTION_LINES:
                found.append(f"{path}:{node.lineno} {node.name}: {size} code lines")
    return found


def test_no_module_or_function_is_too_long() -> None:
    found = [line for path in _sources() for line in oversized(path)]
    assert not found, "\n".join(found)


def test_code_lines_leave_out_the_docstring_and_comments() -> None:
    source = 'def f():\n    """Doc.\n\n    More.\n    """\n    # why\n\n    return 1\n'
    [node] = ast.parse(source).body
    assert isinstance(node, ast.FunctionDef)
    assert code_lines(source, node) == 2  # the def line and the return
