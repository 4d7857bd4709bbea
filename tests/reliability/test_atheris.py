"""The atheris fuzz targets (``atheris_targets.py``), each run in its own process, under pytest.

Same markers as the Hypothesis targets: ``-m fuzz`` (the smoke run: :data:`SMOKE_SECONDS` per
target, about a minute over all thirteen; ``.ci/run`` runs it) and ``-m fuzz_long``
(``MCPSYNC_ATHERIS_SECONDS`` per target, default :data:`LONG_SECONDS`). A target that ends in a
crash (an exception the reader does not document), a timeout or running out of memory fails with
the target's name, the input's path and repr, the command that replays it and the traceback. The
inputs, corpus and artifacts stay in the test's temporary directory. ``MCPSYNC_FUZZ_REPORT=path``
appends one line per target (name, level, inputs executed, branches reached).

atheris has wheels for CPython on Linux x86_64 only: elsewhere these skip, and the Hypothesis
targets still cover every reader.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from .atheris_targets import TARGETS, run

SMOKE_SECONDS = 3
LONG_SECONDS = 120
long_seconds = float(os.environ.get("MCPSYNC_ATHERIS_SECONDS") or LONG_SECONDS)

LEVELS = [pytest.param("smoke", id="smoke", marks=[pytest.mark.fuzz, pytest.mark.timeout(SMOKE_SECONDS * 2 + 120)]),
          pytest.param("long", id="long", marks=[pytest.mark.fuzz_long, pytest.mark.timeout(long_seconds * 2 + 180)])]

pytestmark = pytest.mark.skipif(importlib.util.find_spec("atheris") is None,
                                reason="atheris is not installed (wheels exist for CPython on Linux x86_64 only); "
                                       "the Hypothesis targets (test_fuzz_*.py) cover the same readers")


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", list(TARGETS))
def test_atheris(name: str, level: str, tmp_path: Path) -> None:
    seconds = SMOKE_SECONDS if level == "smoke" else long_seconds
    outcome = run(name, seconds, tmp_path)
    if not outcome.ok:
        pytest.fail(outcome.explain(), pytrace=False)
    assert outcome.runs > 0, f"atheris target {name!r} ran no input:\n{outcome.output[-3000:]}"
    report = os.environ.get("MCPSYNC_FUZZ_REPORT")
    if report:
        with open(report, "a", encoding="utf-8") as out:
            out.write(f"{name}\tatheris-{level}\t{outcome.runs}\tcov={outcome.coverage}\n")
