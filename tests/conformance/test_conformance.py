"""The MCP conformance harness's client scenarios, run one at a time against the glue client (``client.py``).

Each pinned harness version is installed on first use (see ``harness.py``;
it needs npm and the npm registry once, then runs from the cache). Without
npm or the registry the tests skip and say why; set
``MCPSYNC_CONFORMANCE_REQUIRED=1`` (CI) to make that an error instead.

Each scenario is one test, bounded by its own timeout. Scenarios mcpsync does
not pass yet are strict expected failures, each with its reason: when one
starts passing, the test fails until its entry is removed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest

from .harness import Harness, HarnessUnavailable, glue_client

pytestmark = pytest.mark.slow

COMMON = [
    "initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
    "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
    "auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
    "auth/pre-registration", "auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
]

# The client scenarios each pinned version lists (test_scenario_lists checks them against the harness).
SCENARIOS: Dict[str, List[str]] = {
    "0.1.16": COMMON + ["auth/client-credentials-jwt", "auth/client-credentials-basic",
                        "auth/cross-app-access-complete-flow"],
    "0.2.0-alpha.12": COMMON[:4] + ["request-metadata"] + COMMON[4:] + [
        "auth/authorization-server-migration", "auth/iss-supported", "auth/iss-not-advertised",
        "auth/iss-supported-missing", "auth/iss-wrong-issuer", "auth/iss-unexpected", "auth/iss-normalized",
        "auth/metadata-issuer-mismatch", "auth/client-credentials-jwt", "auth/client-credentials-basic",
        "auth/enterprise-managed-authorization", "auth/dpop", "auth/dpop-nonce", "auth/wif-jwt-bearer",
        "sep-2322-client-request-state", "http-standard-headers", "http-custom-headers",
        "http-invalid-tool-headers", "json-schema-ref-no-deref", "json-schema-2020-12-preservation",
        "sep-2640-client-no-prefetch", "sep-2640-client-verify-digest", "sep-2640-client-verify-size",
        "sep-2640-client-verify-frontmatter",
    ],
}

# (version or "*", scenario) -> why mcpsync does not pass it yet (issue 14).
EXPECTED_FAILURES: Dict[Tuple[str, str], str] = {
    ("0.1.16", "auth/2025-03-26-oauth-metadata-backcompat"):
        "harness defect in 0.1.16: its mock serves authorization server metadata whose issuer does not match "
        "the URL it was fetched from, so an issuer-validating client must refuse it (fixed in 0.2)",
}

VERSIONS = list(SCENARIOS)
_harnesses: Dict[str, Harness] = {}
_unavailable: Dict[str, str] = {}  # version -> why its install failed (tried once per session)


def _harness(version: str) -> Harness:
    """The installed harness, installing it once per session; skips (or fails, when required) if it cannot."""
    harness = _harnesses.setdefault(version, Harness(version))
    if version not in _unavailable:
        try:
            harness.install()
        except HarnessUnavailable as exc:
            _unavailable[version] = str(exc)
    if version in _unavailable:
        message = f"conformance harness {version} unavailable: {_unavailable[version]}"
        if os.environ.get("MCPSYNC_CONFORMANCE_REQUIRED"):
            pytest.fail(message)
        pytest.skip(message)
    return harness


def _cases() -> Iterator["pytest.ParameterSet"]:
    for version, scenarios in SCENARIOS.items():
        for scenario in scenarios:
            reason = EXPECTED_FAILURES.get((version, scenario)) or EXPECTED_FAILURES.get(("*", scenario))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(version, scenario, marks=marks, id=f"{version}:{scenario}")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("version", VERSIONS)
def test_scenario_lists(version: str) -> None:
    """The pinned lists above are exactly what the harness offers (a new scenario must be added here)."""
    assert _harness(version).client_scenarios() == SCENARIOS[version]


@pytest.mark.timeout(600)  # the first test of a version may install it (npm)
@pytest.mark.parametrize("version, scenario", list(_cases()))
def test_client_scenario(version: str, scenario: str, tmp_path: Path) -> None:
    harness = _harness(version)
    outcome = harness.run_client(scenario, glue_client(), tmp_path, timeout=90.0)
    assert outcome.passed, f"{scenario} on conformance {version}: {outcome.summary()}"
    if outcome.judged == 0:  # e.g. the skills scenarios, whose checks run only once a client reads skills
        skipped = [str(c.get("id")) for c in outcome.checks if c.get("status") == "SKIPPED"]
        pytest.skip(f"{scenario}: the harness exited 0 but decided no check (skipped: {', '.join(skipped)}); "
                    "the glue client does not exercise what it tests")
