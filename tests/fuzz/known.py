"""Failures the fuzzers found that are not fixed yet, each with its reproducer.

Each entry names its ``xfail(strict=True)`` test in ``test_found.py`` and says how
to recognise the failure. The CI fuzz tests pass over a known failure (so the
suite stays green) and run.py counts it apart from new ones. When a fix lands,
its reproducer passes, the strict xfail fails the suite, and the entry goes.
"""

from __future__ import annotations

from collections.abc import Callable

LANG_STRING = ("must not be rdf:langString", "must not be rdf:dirLangString")


def _lang_string_datatype(exc: BaseException) -> bool:
    """A belief whose context gives rdf:datatype rdf:langString or rdf:dirLangString."""
    text = str(exc)
    return isinstance(exc, SyntaxError | AssertionError) and any(
        m in text for m in LANG_STRING
    )


def _stray_blob_quad(exc: BaseException) -> bool:
    """A restore that wrote a quad other than oms:blob into oms:blobs."""
    return isinstance(exc, AssertionError) and "oms:blobs holds <nih:" in str(exc)


KNOWN: dict[str, Callable[[BaseException], bool]] = {
    "test_found.py::test_a_lang_string_datatype_in_context_is_refused_on_a_store_with_grains":
        _lang_string_datatype,
    "test_found.py::test_a_restore_refuses_a_stray_quad_in_the_blobs_graph":
        _stray_blob_quad,
}  # fmt: skip


def known(exc: BaseException) -> str | None:
    """The reproducer of a known, unfixed failure ``exc`` is, or None."""
    for name, matches in KNOWN.items():
        if matches(exc):
            return name
    return None
