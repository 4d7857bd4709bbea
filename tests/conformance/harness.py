"""Installing and running the MCP conformance harness (``@modelcontextprotocol/conformance``) for the tests.

The harness is a node program. Each pinned version is installed with npm,
together with the ``node`` package (the harness needs node 22 or newer; the
machine's own node may be older), into its own folder under the cache
(``$MCPSYNC_CONFORMANCE_CACHE``, default ``~/.cache/mcpsync-conformance``).
An installed folder is reused; installing needs the npm registry.

Every call here blocks its thread and is bounded by a timeout; the harness
runs in its own process group, which is killed whole when it overruns, so a
hanging scenario never leaves a node or Python process behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "@modelcontextprotocol/conformance"
NODE_PACKAGE = "node@22"
INSTALL_TIMEOUT = 420.0


class HarnessUnavailable(Exception):
    """The harness could not be installed (no npm, no network...): the message says why and what to do."""


def cache_root() -> Path:
    configured = os.environ.get("MCPSYNC_CONFORMANCE_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "mcpsync-conformance"


@dataclass(frozen=True)
class Outcome:
    """One scenario's run: the harness's exit status, what it printed, and its checks (from checks.json)."""

    returncode: Optional[int]  # None: it overran its timeout and was killed
    output: str
    checks: List[Dict[str, object]]

    @property
    def passed(self) -> bool:
        return self.returncode == 0

    @property
    def judged(self) -> int:
        """How many checks the harness decided (SUCCESS or FAILURE); SKIPPED and INFO ones do not count."""
        return sum(1 for c in self.checks if c.get("status") in ("SUCCESS", "FAILURE"))

    def failures(self) -> List[str]:
        return [f"{c.get('id')}: {c.get('errorMessage') or c.get('description')}" for c in self.checks
                if c.get("status") in ("FAILURE", "WARNING")]

    def summary(self) -> str:
        if self.returncode is None:
            return "the harness overran its timeout and was killed"
        failed = self.failures()
        tail = "\n".join(self.output.strip().splitlines()[-25:])
        return (f"harness exit status {self.returncode}; failed checks: {failed or 'none'}\n"
                f"--- last lines of the harness output ---\n{tail}")


class Harness:
    """One installed harness version (installed on first use). Not thread-safe; blocking."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.folder = cache_root() / version
        self.node_bin = self.folder / "node_modules" / "node" / "bin"
        self.program = self.folder / "node_modules" / ".bin" / "conformance"

    def installed(self) -> bool:
        return self.program.exists() and (self.node_bin / "node").exists()

    def install(self) -> None:
        """Install the pinned harness and node 22 with npm, unless already there.

        Raises:
            HarnessUnavailable: npm is missing, or the install failed or overran (the npm output is in the message).
        """
        if self.installed():
            return
        npm = shutil.which("npm")
        if npm is None:
            raise HarnessUnavailable("npm is not on PATH: install node and npm to run the conformance suite")
        self.folder.mkdir(parents=True, exist_ok=True)
        manifest = self.folder / "package.json"
        if not manifest.exists():
            manifest.write_text(json.dumps({"private": True, "description": "mcpsync conformance harness"}))
        # Few, short retries: an unreachable registry fails in seconds instead of minutes.
        command = [npm, "install", "--no-audit", "--no-fund", "--fetch-retries=2", "--fetch-retry-mintimeout=2000",
                   "--fetch-retry-maxtimeout=10000", "--fetch-timeout=60000", "--prefix", str(self.folder),
                   f"{PACKAGE}@{self.version}", NODE_PACKAGE]
        code, output = _run(command, cwd=self.folder, env=dict(os.environ), timeout=INSTALL_TIMEOUT)
        if code != 0 or not self.installed():
            why = "timed out" if code is None else f"exited with {code}"
            tail = "\n".join(output.strip().splitlines()[-15:])
            raise HarnessUnavailable(f"npm install of {PACKAGE}@{self.version} {why} (is the npm registry "
                                     f"reachable?); its last output:\n{tail}")

    def environment(self) -> Dict[str, str]:
        env = dict(os.environ)
        env["PATH"] = str(self.node_bin) + os.pathsep + env.get("PATH", "")
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") \
            else str(ROOT)
        env.pop("MCP_CONFORMANCE_CONTEXT", None)
        return env

    def client_scenarios(self) -> List[str]:
        """The client scenarios this version lists (``conformance list --client``)."""
        code, output = _run([str(self.program), "list", "--client"], cwd=ROOT, env=self.environment(),
                            timeout=60.0)
        if code != 0:
            raise HarnessUnavailable(f"conformance list failed ({code}):\n{output[-2000:]}")
        return [line.strip()[2:].split()[0] for line in output.splitlines() if line.strip().startswith("- ")]

    def run_client(self, scenario: str, client: Sequence[str], output_dir: Path, *,
                   scenario_timeout_ms: int = 30000, timeout: float = 90.0) -> Outcome:
        """Run one client scenario against ``client`` (an argv the harness appends the server URL to)."""
        command = [str(self.program), "client", "--command", " ".join(client), "--scenario", scenario,
                   "--timeout", str(scenario_timeout_ms), "-o", str(output_dir)]
        code, output = _run(command, cwd=ROOT, env=self.environment(), timeout=timeout)
        checks: List[Dict[str, object]] = []
        for found in sorted(output_dir.rglob("checks.json")):
            try:
                loaded = json.loads(found.read_text())
            except ValueError:
                continue
            checks.extend(c for c in loaded if isinstance(c, dict))
        return Outcome(code, output, checks)


def glue_client() -> List[str]:
    """The argv of the glue client, for the harness's ``--command`` (a shell word list)."""
    return [sys.executable, "-m", "tests.conformance.client"]


def _run(command: Sequence[str], *, cwd: Path, env: Dict[str, str], timeout: float) -> "tuple[Optional[int], str]":
    """Run ``command`` in its own process group; on overrun kill the group. (exit status or None, output)."""
    process = subprocess.Popen(list(command), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = process.communicate(timeout=timeout)
        code: Optional[int] = process.returncode
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        out, _ = process.communicate()
        code = None
    _kill_group(process.pid)  # a client the harness gave up on may outlive it (it kills only its shell)
    return code, out.decode("utf-8", "replace")


def _kill_group(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
