"""The fuzzing harness: run one reader of outside input over generated inputs, each bounded in CPU time.

A fuzz target is a function of one input that must end in a result or in the error the reader
documents (an :class:`~mcpsync.MCPSyncError`, or the one internal error its caller turns into
one). Anything else raised, or an input that runs longer than :data:`PER_INPUT_SECONDS` of CPU
time, fails the run with the (shrunk) input that did it; the memory the whole run adds is bounded
by :data:`MEMORY_GROWTH_LIMIT`.

Two runs, by marker (both excluded from the default test command):

* ``python -m pytest -m fuzz``: the smoke run, about a minute over every target; ``.ci/run`` runs it.
  Fixed seeds: every run tries the same inputs.
* ``python -m pytest -m fuzz_long``: the long run, random seeds, :data:`LONG_EXAMPLES` inputs per
  target (``MCPSYNC_FUZZ_EXAMPLES`` sets the count for either run). ``MCPSYNC_FUZZ_REPORT=path``
  appends one line per target (its name and the inputs tried) to ``path``.

Hypothesis and atheris: every target here also runs under atheris (``atheris_targets.py``, run by
``test_atheris.py`` under the same two markers), calling the same target functions under the same
rule. The two find different things. Hypothesis draws inputs from a grammar of each format plus
hostile shapes (megabyte lines, brackets thousands deep), runs inside pytest on every platform, and
shrinks what it finds to a small input. atheris (libFuzzer) mutates bytes guided by the branches
of mcpsync each input reaches, so it walks into paths no strategy names, at thousands of inputs a
second; but it runs each target in a process of its own (``atheris.Fuzz()`` ends the process) and
has wheels for CPython on Linux x86_64 only (elsewhere its tests skip).
"""

from __future__ import annotations

import logging
import os
import resource
import signal
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Tuple, Type

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

#: CPU seconds one input may take (a timer on the process's CPU time: pytest-timeout keeps its own).
PER_INPUT_SECONDS = 2.0
#: How much the resident set may grow over one target's whole run.
MEMORY_GROWTH_LIMIT = 512 * 2 ** 20
SMOKE_EXAMPLES = 250
LONG_EXAMPLES = 20_000

#: The two levels, for ``pytest.mark.parametrize("level", LEVELS)``.
LEVELS = [pytest.param("smoke", id="smoke", marks=[pytest.mark.fuzz, pytest.mark.timeout(120)]),
          pytest.param("long", id="long", marks=[pytest.mark.fuzz_long, pytest.mark.timeout(7200)])]


class InputTooSlow(BaseException):
    """One input ran past :data:`PER_INPUT_SECONDS` (a BaseException, so no reader's handler swallows it)."""


@contextmanager
def cpu_limit(seconds: float = PER_INPUT_SECONDS) -> Iterator[None]:
    def expired(signum: int, frame: Any) -> None:
        raise InputTooSlow(f"one input took more than {seconds} s of CPU time")

    previous = signal.signal(signal.SIGVTALRM, expired)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def fuzz(name: str, level: str, inputs: st.SearchStrategy[Any], target: Callable[[Any], Any],
         allowed: Tuple[Type[BaseException], ...]) -> int:
    """Run ``target`` over ``inputs``; every input must return or raise one of ``allowed``. Returns the count."""
    default = SMOKE_EXAMPLES if level == "smoke" else LONG_EXAMPLES
    examples = int(os.environ.get("MCPSYNC_FUZZ_EXAMPLES") or default)
    tried = [0]

    @settings(max_examples=examples, derandomize=level == "smoke", database=None, deadline=None,
              suppress_health_check=list(HealthCheck), print_blob=True)
    @given(inputs)
    def check(data: Any) -> None:
        tried[0] += 1
        with cpu_limit():
            try:
                target(data)
            except allowed:
                pass

    before = _peak_rss()
    logger = logging.getLogger("mcpsync")
    level_before = logger.level
    logger.setLevel(logging.CRITICAL)  # garbage by the thousand: each reader's warnings are tested elsewhere
    try:
        check()
    finally:
        logger.setLevel(level_before)
    grown = _peak_rss() - before
    assert grown < MEMORY_GROWTH_LIMIT, f"{name}: the run grew the process by {grown / 2 ** 20:.0f} MiB"
    report = os.environ.get("MCPSYNC_FUZZ_REPORT")
    if report:
        with open(report, "a", encoding="utf-8") as out:
            out.write(f"{name}\t{level}\t{tried[0]}\n")
    return tried[0]
