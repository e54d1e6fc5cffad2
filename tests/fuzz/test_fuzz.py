"""The fuzz targets under hypothesis, a CI-sized budget; run.py does the long runs."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .seeds import mutate, seeds_for
from .targets import TARGETS

BUDGET = {
    "decode": 400,
    "container": 200,
    "frames": 200,
    "envelope": 200,
    "json_line": 300,
}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_only_oms_errors_escape_and_what_decodes_round_trips(name: str) -> None:
    target, seeds = TARGETS[name], seeds_for(name)

    @settings(max_examples=BUDGET.get(name, 200), deadline=None, database=None)
    @given(
        seed=st.sampled_from(seeds),
        salt=st.integers(0, 2**32),
        raw=st.binary(max_size=64),
    )
    def check(seed: bytes, salt: int, raw: bytes) -> None:
        rng = random.Random(salt)
        target(raw if salt % 10 == 0 else mutate(seed, rng))

    check()
