"""Coverage-guided fuzz targets (atheris, on libFuzzer) of every reader of outside input.

The same thirteen targets as ``tests/reliability/test_fuzz_*.py``, calling the same target
functions under the same rule (:mod:`tests.reliability.fuzzing`): every input ends in a result or
in the error the reader documents, within :data:`~tests.reliability.fuzzing.PER_INPUT_SECONDS` of
CPU time, and the process may grow by at most
:data:`~tests.reliability.fuzzing.MEMORY_GROWTH_LIMIT`. Where Hypothesis draws each input from a
grammar of the format, atheris mutates bytes and keeps those that reach new branches of mcpsync
(its modules are instrumented as they are imported), so it finds paths nobody wrote a strategy for.

One target per process (``atheris.Fuzz()`` ends the process)::

    python tests/reliability/atheris_targets.py TARGET [libFuzzer options] [corpus dirs or a file]
    python tests/reliability/atheris_targets.py sse -max_total_time=60
    python tests/reliability/atheris_targets.py sse /tmp/mcpsync-atheris-x/crash-1f0c...   # replay one input
    python tests/reliability/atheris_targets.py --list

Without a corpus argument a target starts from its seeds (a few inputs written below, copied to a
fresh corpus directory). Work files, the corpus and any crash, timeout or out-of-memory input go to
``MCPSYNC_FUZZ_WORKDIR`` (default: a new temporary directory; never the repository). Defaults, each
overridden by passing the option: ``-timeout=5`` (wall seconds: the backstop for time spent where
Python's CPU timer cannot interrupt, such as inside a regex), ``-rss_limit_mb`` = the resident set
at start plus the growth limit, ``-max_len=16384``, ``-print_final_stats=1``.

:func:`run` runs one target in a subprocess and reads the outcome (the pytest wrapper,
``test_atheris.py``, is made of it). This module imports nothing of mcpsync at import time: the
target modules are imported under ``atheris.instrument_imports`` so mcpsync is instrumented.
"""

from __future__ import annotations

import gc
import importlib.metadata
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[2]
SEPARATOR = b"\xff"  # between the fields of one input: a byte no UTF-8 text holds
WALL_TIMEOUT = 5
MAX_LEN = 16384
LIMIT = 4096  # the small max_message_size the wire targets use (test_fuzz_wire.LIMIT)

OneInput = Callable[[bytes], None]


@dataclass(frozen=True)
class Target:
    """One reader: ``build(workdir)`` returns the function of one input's bytes; ``allowed`` the errors it may end in."""

    name: str
    build: Callable[[Path], OneInput]
    allowed: Callable[[], Tuple[type, ...]]
    modules: Tuple[str, ...]  # the reader's modules (and packages): the code whose branches guide the fuzzer
    seeds: Tuple[bytes, ...]


def fields(data: bytes, count: int) -> List[bytes]:
    """``data`` cut at :data:`SEPARATOR` into exactly ``count`` fields (the last takes the rest)."""
    parts = data.split(SEPARATOR, count - 1)
    return parts + [b""] * (count - len(parts))


def text(data: bytes) -> str:
    """Bytes as text a JSON document can hold: UTF-8, undecodable bytes as lone surrogates."""
    return data.decode("utf-8", "surrogateescape")


def mcpsync_error() -> Tuple[type, ...]:
    from mcpsync import MCPSyncError
    return (MCPSyncError,)


# -- the targets: each adapts bytes to the input its Hypothesis twin takes, and calls the same function --

def www_authenticate(workdir: Path) -> OneInput:
    from tests.reliability.test_fuzz_auth import read_challenge

    def one(data: bytes) -> None:
        read_challenge(data.decode("latin-1"))  # how the HTTP client decodes a header line
    return one


def token_file(workdir: Path) -> OneInput:
    from tests.reliability.test_fuzz_auth import token_file_reader
    return token_file_reader(workdir / "tokens.json")


def dpop_nonce(workdir: Path) -> OneInput:
    from tests.reliability.test_fuzz_auth import note_nonce

    def one(data: bytes) -> None:
        url, nonce = fields(data, 2)
        note_nonce((text(url), nonce.decode("latin-1")))
    return one


CLASSES = ("loopback", "private", "public")


def url_classifier(workdir: Path) -> OneInput:
    from tests.reliability.test_fuzz_auth import classify, readable

    def one(data: bytes) -> None:
        if not data:
            return
        server_url, url, resolved = fields(data[1:], 3)
        server = text(server_url)
        if not readable(server):  # as the Hypothesis target: the gate is made for a URL already connected to
            return
        addresses = [text(a) for a in resolved.split(SEPARATOR)[:3] if a]
        classify((CLASSES[data[0] % 3], server, text(url), addresses))
    return one


def jsonc(workdir: Path) -> OneInput:
    from mcpsync.config._jsonc import parse_json

    def one(data: bytes) -> None:
        try:
            source = data.decode("utf-8")  # the config reader decodes first (the config-file target covers that)
        except UnicodeDecodeError:
            return
        parse_json(source)
    return one


def config_file(workdir: Path) -> OneInput:
    from tests.reliability.test_fuzz_files import config_file_reader
    read = config_file_reader(workdir)

    def one(data: bytes) -> None:
        if data:
            read(("config.toml" if data[0] & 1 else "mcp.json", data[1:]))
    return one


def trust_record(workdir: Path) -> OneInput:
    from tests.reliability.test_fuzz_files import trust_record_reader
    return trust_record_reader(workdir / "trusted-projects.json")


def tools_cache(workdir: Path) -> OneInput:
    from tests.reliability.test_fuzz_files import tools_cache_reader
    return tools_cache_reader(workdir / "cache")


def frontmatter(workdir: Path) -> OneInput:
    from mcpsync._features.frontmatter import parse_frontmatter

    def one(data: bytes) -> None:
        try:
            source = data.decode("utf-8")  # as load_skill: a SKILL.md that is not UTF-8 is refused before
        except UnicodeDecodeError:
            return
        parse_frontmatter(source)
    return one


def frontmatter_error() -> Tuple[type, ...]:
    from mcpsync._features.frontmatter import FrontmatterError
    return (FrontmatterError,)


def stdio_lines(workdir: Path) -> OneInput:
    from tests.reliability.test_fuzz_wire import read_stdio
    return read_stdio


def jsonrpc_decode(workdir: Path) -> OneInput:
    from tests.reliability.test_fuzz_wire import decode_message
    return decode_message


def sse(workdir: Path) -> OneInput:
    from tests.reliability.test_fuzz_wire import read_sse

    def one(data: bytes) -> None:
        # The first byte is the number of cuts (0-6), then two bytes per cut: where the stream is
        # split into the chunks the network delivered.
        if not data:
            return
        count = min(data[0] % 7, (len(data) - 1) // 2)
        cuts = [int.from_bytes(data[1 + 2 * i:3 + 2 * i], "big") for i in range(count)]
        read_sse((data[1 + 2 * count:], cuts))
    return one


def html_error_page(workdir: Path) -> OneInput:
    from tests.reliability.test_fuzz_wire import summarise

    def one(data: bytes) -> None:
        summarise(data.decode("utf-8", "replace"))  # as requests' ``Response.text``
    return one


def _cuts(*points: int) -> bytes:
    return bytes([len(points)]) + b"".join(p.to_bytes(2, "big") for p in points)


TARGETS: Dict[str, Target] = {t.name: t for t in [
    Target("www-authenticate", www_authenticate, mcpsync_error, ("mcpsync.auth._challenge",), (
        b'Bearer resource_metadata="https://h/.well-known/oauth-protected-resource", scope="a b"',
        b'DPoP error="use_dpop_nonce", error_description="x", Bearer realm="r", error=invalid_token',
        b'Basic realm="a\\"b", Bearer a==b',
    )),
    Target("token-file", token_file, mcpsync_error, ("mcpsync.auth._tokens", "mcpsync.auth._grant", "mcpsync.auth._dpop",
                                                      "mcpsync.auth._registration"), (
        b'{"k": {"issuer": "https://as", "resource": "https://rs", "token_endpoint": "https://as/token",'
        b' "client": {"client_id": "c", "auth_method": "none", "source": "dcr"},'
        b' "token": {"access_token": "a", "expires_at": 1e9, "refresh_token": "r", "token_type": "DPoP"},'
        b' "scopes": ["s"], "dpop_key": {"kty": "EC", "crv": "P-256", "x": "x", "y": "y", "d": "d"}}}',
        b'{"other": {"token": {"access_token": "a", "lifetime": 3600, "scope": "s"}}}',
    )),
    Target("dpop-nonce", dpop_nonce, mcpsync_error, ("mcpsync.auth._dpop",), (
        b"https://as.example/token" + SEPARATOR + b"nonce-1",
        b"http://[::1]:8080/x" + SEPARATOR + b"n",
    )),
    Target("url-classifier", url_classifier, mcpsync_error, ("mcpsync.transports._egress",), (
        b"\x02https://mcp.example/mcp" + SEPARATOR + b"https://as.example/.well-known/x" + SEPARATOR
        + b"93.184.216.34",
        b"\x01http://10.0.0.5:8080/mcp" + SEPARATOR + b"http://0.0.0.0:9/" + SEPARATOR + b"10.0.0.6"
        + SEPARATOR + b"::1",
        b"\x00http://127.0.0.1:1/mcp" + SEPARATOR + b"http://[fd00:ec2::254]/latest" + SEPARATOR,
    )),
    Target("jsonc", jsonc, lambda: (ValueError,), ("mcpsync.config._jsonc",), (
        b'{\n  // a comment\n  "mcpServers": {"s": {"command": "x", "args": ["a",],}}, /* b */\n}',
        b'[1, 2.5e3, "\\u00e9", true, false, null]',
    )),
    Target("config-file", config_file, mcpsync_error, ("mcpsync.config",), (
        b'\x00{"mcpServers": {"s": {"command": "python", "args": ["-m", "x"], "env": {"A": "${B:-c}"}},'
        b' "h": {"url": "https://h/mcp", "headers": {"X-Api-Key": "k"}}}}',
        b"\x01[mcp_servers.s]\ncommand = 'x'\nargs = ['a']\nenv = {A = '1'}\n",
    )),
    Target("trust-record", trust_record, mcpsync_error, ("mcpsync.config._trust",), (
        b'{"version": 1, "projects": {"/p/.mcp.json": {"sha256": "00", "trusted_at": 1.5}}}',
    )),
    Target("tools-cache", tools_cache, mcpsync_error, ("mcpsync._fleet.toolcache",), (
        b'{"version": 1, "server": "s", "config_hash": "h", "saved_at": 1e12, "tools": [{"name": "t"}]}',
    )),
    Target("frontmatter", frontmatter, frontmatter_error, ("mcpsync._features.frontmatter",), (
        b"---\nname: a-skill\ndescription: 'it''s' # c\nlist:\n  - a\n  - {k: [1, 2]}\ntext: |\n  x\n---\nbody\n",
        b'---\nkey: "q\\"x"\nn: 0x1F\nf: .inf\nx: >-\n  folded\n---\n',
    )),
    Target("stdio-lines", stdio_lines, mcpsync_error, ("mcpsync.transports.stdio",
                                                        "mcpsync._rpc.jsonrpc"), (
        b'{"jsonrpc": "2.0", "id": 1, "result": {}}\n{"jsonrpc": "2.0", "method": "ping"}\r\n\n',
        b'{"x": "' + b"a" * (LIMIT + 10) + b'"}\n[]\n',
    )),
    Target("jsonrpc-decode", jsonrpc_decode, mcpsync_error, ("mcpsync._rpc.jsonrpc",), (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {}}}',
        b'[{"jsonrpc": "2.0", "id": "a", "error": {"code": -32601, "message": "m"}}]',
    )),
    Target("sse", sse, mcpsync_error, ("mcpsync.transports._sse", "mcpsync._rpc.jsonrpc"), (
        _cuts() + b'event: endpoint\ndata: /messages?s=1\n\nid: 7\nretry: 1500\ndata: {"jsonrpc": "2.0"}\n\n',
        _cuts(3, 9) + b"\xef\xbb\xbf: c\r\ndata: a\rdata: b\r\n\r\n",
        _cuts() + b"data: " + b"a" * (LIMIT + 10) + b"\n\n",
    )),
    Target("html-error-page", html_error_page, mcpsync_error, ("mcpsync.transports._http_io",
                                                                "mcpsync.transports._html"), (
        b"<!doctype html><html><head><title>502 Bad Gateway</title><style>x{}</style></head>"
        b"<body><h1>Bad &amp; Gateway</h1><script>var a = '</h1>';</script></body></html>",
    )),
]}


# -- running one target in this process (the subprocess side) -------------------------------------

def _rss_mb() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2 ** 20


def _instrument(atheris: Any, modules: Sequence[str]) -> None:
    """Instrument the functions (and methods, and the functions nested in them) of ``modules``.

    Only the reader's own modules: ``atheris.instrument_imports(include=["mcpsync"])`` would
    instrument all of mcpsync as the target's imports pull it in, 3-4 s of CPU before each run.
    """
    def wanted(module: str) -> bool:
        return any(module == m or module.startswith(m + ".") for m in modules)

    found = [obj for obj in gc.get_objects() if isinstance(obj, types.FunctionType) and wanted(obj.__module__ or "")]
    for function in found:
        atheris.instrument_func(function)
    if not found:
        raise RuntimeError(f"no function of {', '.join(modules)} was loaded: the target names the wrong modules")


def _fuzz(name: str, options: List[str]) -> None:
    import atheris  # type: ignore[import-not-found]

    sys.path.insert(0, str(ROOT))
    target = TARGETS[name]
    workdir = Path(os.environ.get("MCPSYNC_FUZZ_WORKDIR") or tempfile.mkdtemp(prefix="mcpsync-atheris-"))
    workdir.mkdir(parents=True, exist_ok=True)
    # Not atheris.enabled_hooks' "RegEx": its pattern proxy breaks ``pattern.match(text, pos)``,
    # which the readers call (a TypeError in every input that reaches one).
    # "str" (startswith/endswith comparisons guide the mutations) only from atheris 3: in 2.3 (the
    # wheels of Python 3.9 and 3.10) it reads ``startswith(("[", "{"))``'s "[" as a pattern and raises.
    if int(importlib.metadata.version("atheris").split(".")[0]) >= 3:
        atheris.enabled_hooks.add("str")
    from tests.reliability.fuzzing import MEMORY_GROWTH_LIMIT, PER_INPUT_SECONDS, InputTooSlow
    read = target.build(workdir)
    allowed = target.allowed()
    _instrument(atheris, target.modules)
    logging.getLogger("mcpsync").setLevel(logging.CRITICAL)  # garbage by the million: warnings are tested elsewhere

    def expired(signum: int, frame: Any) -> None:
        raise InputTooSlow(f"one input took more than {PER_INPUT_SECONDS} s of CPU time")

    signal.signal(signal.SIGVTALRM, expired)

    def one_input(data: bytes) -> None:
        signal.setitimer(signal.ITIMER_VIRTUAL, PER_INPUT_SECONDS)
        try:
            read(data)
        except allowed:
            pass
        finally:
            signal.setitimer(signal.ITIMER_VIRTUAL, 0)

    given = {option.split("=", 1)[0] for option in options if option.startswith("-")}
    positional = [option for option in options if not option.startswith("-")]
    defaults = {"-timeout": str(WALL_TIMEOUT), "-rss_limit_mb": str(_rss_mb() + MEMORY_GROWTH_LIMIT // 2 ** 20),
                "-max_len": str(MAX_LEN), "-print_final_stats": "1", "-artifact_prefix": f"{workdir}{os.sep}"}
    argv = [sys.argv[0]] + [f"{k}={v}" for k, v in defaults.items() if k not in given] + options
    if not positional:
        corpus = Path(tempfile.mkdtemp(prefix=f"corpus-{name}-", dir=workdir))
        for index, seed in enumerate(target.seeds):
            (corpus / f"seed-{index}").write_bytes(seed)
        argv.append(str(corpus))
    atheris.Setup(argv, one_input)
    atheris.Fuzz()


# -- running one target in a subprocess and reading the outcome (the pytest side) ------------------

@dataclass
class Outcome:
    """What one run of a target ended in."""

    name: str
    returncode: int
    runs: int  # inputs executed
    coverage: int  # branches reached (libFuzzer's ``cov``)
    failure: Optional[str]  # None, or "crash" (an uncaught exception), "timeout", "out-of-memory", ...
    artifact: Optional[Path]  # the input that did it
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.failure is None

    def explain(self) -> str:
        """The failure for a test report: target, kind, the input (path and repr), how to replay it, the traceback."""
        lines = [f"atheris target {self.name!r}: {self.failure or 'exit status ' + str(self.returncode)}"]
        if self.artifact is not None:
            data = self.artifact.read_bytes() if self.artifact.exists() else b""
            shown = repr(data[:400]) + (f" ... ({len(data)} bytes)" if len(data) > 400 else "")
            lines += [f"input: {self.artifact}", f"input repr: {shown}",
                      f"replay: {sys.executable} {Path(__file__).relative_to(ROOT)} {self.name} {self.artifact}"]
        start = self.output.find("=== Uncaught Python exception")
        if start < 0:
            start = self.output.find("==ERROR")
        lines.append(self.output[start:start + 4000] if start >= 0 else self.output[-4000:])
        return "\n".join(lines)


FAILURES = [("InputTooSlow", "an input took too long (CPU time)"), ("Uncaught Python exception", "crash"), ("libFuzzer: timeout", "timeout"),
            ("libFuzzer: out-of-memory", "out-of-memory"), ("libFuzzer: deadly signal", "deadly signal"),
            ("libFuzzer: fuzz target exited", "crash")]


def run(name: str, seconds: float, workdir: Path, options: Sequence[str] = ()) -> Outcome:
    """Fuzz target ``name`` for ``seconds`` in a subprocess, its files in ``workdir``; the outcome."""
    env = dict(os.environ, MCPSYNC_FUZZ_WORKDIR=str(workdir), PYTHONPATH=str(ROOT))
    argv = [sys.executable, str(Path(__file__).resolve()), name, f"-max_total_time={max(1, round(seconds))}",
            *options]
    done = subprocess.run(argv, env=env, cwd=str(workdir), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=seconds * 2 + 120)
    output = done.stdout.decode("utf-8", "replace")
    failure = next((kind for marker, kind in FAILURES if marker in output), None)
    written = re.findall(r"Test unit written to (\S+)", output)
    runs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", output)
    coverage = re.findall(r"\bcov: (\d+)", output)
    return Outcome(name, done.returncode, int(runs[-1]) if runs else 0, int(coverage[-1]) if coverage else 0,
                   failure, Path(written[-1]) if written else None, output)


def main(argv: List[str]) -> int:
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    if argv[1] == "--list":
        print("\n".join(TARGETS))
        return 0
    if argv[1] not in TARGETS:
        print(f"no target {argv[1]!r}; the targets: {', '.join(TARGETS)}", file=sys.stderr)
        return 2
    _fuzz(argv[1], argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
