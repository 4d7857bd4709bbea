"""Cold start: the standard-library modules `import mcpsync` may load are pinned.

A plain script pays for everything `import mcpsync` loads on every run (so does the CLI), and
most scripts only connect to one server and call a tool. So digests (``hashlib``, ``hmac``),
archives, ``pathlib``, ``logging`` (until the application loads it), ``subprocess`` (until a
stdio server starts), the HTTP transports, ``shutil``, ``socket``
(until a name is resolved), ``dataclasses`` (which loads ``inspect``), HTTP libraries, asyncio
and OpenTelemetry load when they are first used, not at import. This test runs
``import mcpsync`` in a fresh isolated interpreter and fails when it loads a standard-library
module outside :data:`ALLOWED`: a new feature must load its modules lazily, or argue here why
every script should pay for them. ``benchmarks/stdio_roundtrip.py`` measures the time.
"""

from __future__ import annotations

import json
import subprocess
import sys

from .conftest import ROOT

#: What `import mcpsync` may add to a bare interpreter (``python -I -S``: not even ``site``), by
#: top-level name; C accelerators (names starting with ``_``) go with their module.
ALLOWED = frozenset({
    # what nearly every program loads anyway (``site`` alone loads most of these)
    "__future__", "atexit", "collections", "contextlib", "copy", "copyreg", "enum", "functools",
    "genericpath", "heapq", "itertools", "keyword", "math", "operator", "os", "posixpath", "re",
    "sre_compile", "sre_constants", "sre_parse", "reprlib", "stat", "threading", "types",
    "typing", "warnings", "weakref",
    # URLs (urllib.parse itself loads ipaddress from 3.11 on)
    "urllib", "ipaddress",
    # the wire format
    "json",
    # the stdio transport's pipes and its child's signals
    "select", "signal",
})

#: Never at import, whatever else changes (each named in the issue that pinned this).
NEVER = frozenset({
    "hashlib", "_hashlib", "hmac", "subprocess", "shutil", "pathlib", "bz2", "lzma", "zipfile",
    "tarfile", "dataclasses", "inspect", "socket", "ssl", "asyncio", "requests", "urllib3",
    "http", "email", "opentelemetry", "shlex", "unicodedata", "tempfile", "random", "base64",
    # mcpsync's loggers load logging once the application has (mcpsync/_log.py)
    "logging", "traceback", "linecache", "tokenize", "string", "textwrap",
})

# -S: no site, so nothing a .pth file imports (an editable install's finder loads pathlib) hides
# what mcpsync itself loads.
PROBE = (
    "import json, sys\n"
    "before = set(sys.modules)\n"
    "import mcpsync\n"
    "added = sorted(m for m in set(sys.modules) - before if m.split('.')[0] != 'mcpsync')\n"
    "print(json.dumps(added))\n"
)


def _added() -> list:
    done = subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + PROBE],
                          capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_mcpsync_loads_only_the_pinned_standard_library_modules() -> None:
    added = _added()
    never = sorted(m for m in added if m in NEVER or m.split(".")[0] in NEVER)
    assert not never, f"`import mcpsync` loads {never}: load them where they are first used"
    extra = sorted(m for m in added if not m.startswith("_") and m.split(".")[0] not in ALLOWED)
    assert not extra, (f"`import mcpsync` now also loads {extra}. Load them lazily where they are used, "
                       "or add them to ALLOWED with the reason every script should pay for them")


#: mcpsync's own modules that `import mcpsync` must not load: the HTTP transports (and the stateless
#: calls over HTTP) load when a URL is first connected to or their names are first read; the skills
#: feature and its parsers when a skill is first asked for.
NEVER_OURS = frozenset({
    "mcpsync.transports.sse", "mcpsync.transports.streamable_http", "mcpsync.transports._http",
    "mcpsync.transports._http_io", "mcpsync.transports._egress", "mcpsync.transports._http_session",
    "mcpsync.transports.stateless", "mcpsync.stateless", "mcpsync.manager", "mcpsync.auth", "mcpsync.config",
    "mcpsync._features.skills", "mcpsync._features.frontmatter", "mcpsync.progress", "mcpsync._terminal",
    "mcpsync._signals",
})


def test_import_mcpsync_loads_no_http_transport_and_no_manager() -> None:
    probe = PROBE.replace("m.split('.')[0] != 'mcpsync'", "m.split('.')[0] == 'mcpsync'")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + probe],
                          capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert not loaded & NEVER_OURS, f"`import mcpsync` loads {sorted(loaded & NEVER_OURS)}: load them on first use"
