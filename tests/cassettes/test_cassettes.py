"""Cassettes: record real servers nobody here wrote once, replay them with no server at all.

Each recording test runs a conversation against a real server (an official-SDK server in each era
over stdio and HTTP, ``@modelcontextprotocol/server-everything`` over stdio, Streamable HTTP and
legacy SSE), then replays it where the server cannot start: the program is gone (its symlink
removed) or the port is closed (the server stopped). Every result is compared.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
import threading
import unittest
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

import mcpsync
from mcpsync import CreateMessageResult, ElicitResult
from mcpsync.testing import Cassette, CassetteError, CassetteMismatch, FakeServer, FakeServerMixin, use_cassette
from mcpsync.transports import _seam

from ..conftest import PY, SERVERS, require_sdk
from ..http_fixtures import UvicornThread

sys.path.insert(0, str(SERVERS))
require_sdk()
import era_sdk_server  # noqa: E402

# The SDK server (and node) start in seconds on a loaded machine, past the 3 s default probe
# timeout: an unanswered server/discover probe counts as legacy, so a recording would come out
# in the other era (or with a different request count) than its replay. A probe timeout that
# outlasts the start keeps these tests about cassettes, not about that rule (test_eras_scripted).
PROBE = 30


def missing_later(tmp_path: Path, target: str) -> Path:
    """A program that runs ``target``, which a test removes after recording: then it is not there.

    A script that execs ``target``, not a symlink: a symlink to a venv's python is the bare
    base interpreter (a venv is found beside the path run, not the path linked to), so the
    server would lose the venv's packages (it did on .ci/versions' 3.13 venv)."""
    link = tmp_path / "bin" / Path(target).name
    link.parent.mkdir(exist_ok=True)
    link.write_text(f'#!/bin/sh\nexec {shlex.quote(target)} "$@"\n')
    link.chmod(0o755)
    return link


class Handlers:
    """Answers to the server's sampling and elicitation, the same every run."""

    def __init__(self, colour: str = "teal") -> None:
        self.colour = colour
        self.logs: List[Any] = []
        self.logged = threading.Event()

    def sampling(self, params: Any) -> CreateMessageResult:
        return CreateMessageResult(self.colour, model="test-model")

    def elicitation(self, params: Any) -> ElicitResult:
        return ElicitResult.accept({"answer": "yes"})

    def logging(self, message: Any) -> None:
        self.logs.append(message.data)
        self.logged.set()

    def options(self) -> Dict[str, Any]:
        return dict(sampling_handler=self.sampling, elicitation_handler=self.elicitation, roots=["/srv/data"],
                    logging_handler=self.logging, timeout=15)


def sdk_conversation(client: mcpsync.Client, handlers: Handlers) -> List[Any]:
    """What a test of code using the era SDK server would look at; every value comparable."""
    steps: List[Any] = []
    result: List[Any] = [client.protocol_version, client.server_info.name]
    result.append([tool.name for tool in client.list_tools()])
    result.append(client.call_tool("echo", {"text": "héllo"}).to_dict())
    result.append(client.call_tool("add", {"a": 2, "b": 40}).text)
    result.append(client.call_tool("sample", {"prompt": "A colour?"}).text)
    result.append(client.call_tool("ask", {"question": "Go?"}).text)
    result.append(client.call_tool("where").text)
    result.append(client.call_tool("progress", {"steps": 3},
                                   on_progress=lambda p, t, m: steps.append((p, t, m))).text)
    result.append(steps)
    result.append(client.call_tool("log", {"message": "from the server"}).text)
    assert handlers.logged.wait(10)
    result.append(list(handlers.logs))
    result.append(client.read_resource("demo://greeting").text)
    result.append(client.get_prompt("greet", {"name": "Ada"}).to_dict())
    return result


def record_then_replay(path: Path, run: Callable[[], Any], make_unreachable: Callable[[], None]) -> Any:
    with use_cassette(path) as cassette:
        recorded = run()
    assert cassette.recorded >= 1 and cassette.replayed == 0
    make_unreachable()
    with use_cassette(path, record_mode="none") as cassette:
        replayed = run()
    assert cassette.replayed >= 1 and cassette.recorded == 0
    assert replayed == recorded
    return recorded


# -- official SDK servers, both eras, stdio and HTTP -----------------------------------------------------


@pytest.mark.parametrize("kind, version", [("dual", "2026-07-28"), ("legacy-only", "2025-11-25")])
def test_an_sdk_server_over_stdio_is_replayed_in_each_era_with_the_program_gone(tmp_path, kind, version):
    python = missing_later(tmp_path, PY)
    argv = [str(python), str(SERVERS / "era_sdk_server.py"), *(["--legacy-only"] if kind == "legacy-only" else [])]

    def run() -> Any:
        handlers = Handlers()
        with mcpsync.connect(argv, probe_timeout=PROBE, log_level="info", **handlers.options()) as client:
            return sdk_conversation(client, handlers)

    result = record_then_replay(tmp_path / "sdk.jsonl", run, python.unlink)
    assert result[0] == version and result[5:8] == ["teal", 'accept {"answer": "yes", "count": 7}', "file:///srv/data"]
    with pytest.raises(mcpsync.ConnectError):  # the program really is gone: only the cassette answers
        mcpsync.connect(argv, timeout=5)


@pytest.mark.parametrize("options, version", [({}, "2026-07-28"), ({"legacy_only": True}, "2025-11-25")])
def test_an_sdk_server_over_streamable_http_is_replayed_in_each_era_with_the_port_closed(tmp_path, options, version):
    served = UvicornThread(era_sdk_server.make_app(**options), name="cassette-era").start()
    url = served.url("/mcp")

    def run() -> Any:
        handlers = Handlers()
        with mcpsync.connect(url, log_level="info", **handlers.options()) as client:
            return sdk_conversation(client, handlers)

    try:
        result = record_then_replay(tmp_path / "http.jsonl", run, served.stop)
    finally:
        served.stop()
    assert result[0] == version
    with pytest.raises(mcpsync.ConnectError):
        mcpsync.connect(url, timeout=5)


# -- server-everything: stdio, Streamable HTTP, legacy SSE ----------------------------------------------


def everything_conversation(client: mcpsync.Client) -> List[Any]:
    result: List[Any] = [client.protocol_version, client.server_info.name]
    tools = {tool.name for tool in client.list_tools()}
    result.append(sorted(tools))
    result.append(client.call_tool("echo", {"message": "hello"}).to_dict())
    result.append(client.call_tool("get-sum", {"a": 2, "b": 3}).to_dict())
    result.append([prompt.name for prompt in client.list_prompts()])
    resources = client.list_resources()
    result.append([resource.uri for resource in resources][:3])
    result.append(client.read_resource(resources[0].uri).to_dict())
    return result


def test_server_everything_over_stdio_is_replayed_with_the_program_gone(tmp_path):
    from ..npm_peers import everything_argv

    argv = everything_argv()
    node = missing_later(tmp_path, argv[0])
    argv = [str(node), *argv[1:]]

    def run() -> Any:
        with mcpsync.connect(argv, probe_timeout=PROBE, timeout=30) as client:
            return everything_conversation(client)

    result = record_then_replay(tmp_path / "everything.jsonl", run, node.unlink)
    assert "echo" in result[2] and result[3]["content"][0]["text"].endswith("hello")


@pytest.mark.parametrize("mode, fallback", [("streamableHttp", False), ("sse", False), ("sse", True)])
def test_server_everything_over_http_and_legacy_sse_is_replayed_with_the_port_closed(tmp_path, mode, fallback):
    from ..npm_peers import everything_http

    path = tmp_path / f"{mode}.jsonl"
    with everything_http(mode) as url:
        # the fallback: a bare URL tries Streamable HTTP first, is refused, and goes on over HTTP+SSE
        target = {"type": "sse", "url": url} if mode == "sse" and not fallback else url

        def run() -> Any:
            with mcpsync.connect(target, timeout=30) as client:
                return everything_conversation(client)

        with use_cassette(path):
            recorded = run()
    # the server is stopped: its port is closed
    with use_cassette(path, record_mode="none") as cassette:
        assert run() == recorded
    assert cassette.replayed == 1
    lines = path.read_text().splitlines()
    assert json.loads(lines[1])["transport"] == ("sse" if mode == "sse" and not fallback else "streamable-http")
    assert any('"switch":"sse"' in line for line in lines) == fallback


# -- what a cassette never holds --------------------------------------------------------------------------


def test_a_cassette_recorded_with_a_bearer_token_api_keys_and_query_keys_holds_none_of_them(tmp_path):
    served = UvicornThread(era_sdk_server.make_app(legacy_only=True), name="cassette-secrets").start()
    token, api_key, query_key, extra = "tok-1a2b3c4d5e6f7g8h9", "key-9z8y7x6w5v", "q9w8e7r6t5y4u3i2o1p0", "shh-0011"
    url = served.url(f"/mcp?api_key={query_key}&region=eu")
    path = tmp_path / "secrets.jsonl"
    try:
        with use_cassette(path, filter_headers=["X-Custom"], filter_params=["passphrase"]):
            with mcpsync.connect(url, token=token, timeout=15,
                                 headers={"X-Api-Key": api_key, "X-Custom": extra, "Cookie": "sid=c00kie-value"}) as client:
                assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    finally:
        served.stop()
    text = path.read_text()
    for secret in (token, api_key, query_key, extra, "c00kie-value"):
        assert secret not in text, secret
    assert "region=eu" in text  # a plain query value is kept: it may matter to the server
    with use_cassette(path, record_mode="none", filter_headers=["X-Custom"], filter_params=["passphrase"]):
        with mcpsync.connect(url, token=token, timeout=15) as client:
            assert client.call_tool("echo", {"text": "hi"}).text == "hi"


from ..auth_fixtures import _auth_servers, stack  # noqa: E402,F401  (fixtures)


def test_a_cassette_recorded_through_an_oauth_login_holds_no_code_token_or_client_secret(tmp_path, stack):
    path = tmp_path / "oauth.jsonl"
    with use_cassette(path):
        with stack.connect(stack.oauth()) as client:
            assert client.call_tool("echo", {"text": "authorised"}).text == "authorised"
    secrets = stack.secrets()
    assert secrets and stack.person.logins == 1
    text = path.read_text()
    for secret in secrets:
        assert secret not in text
    assert "Bearer" not in text and "Mcp-Session-Id" not in text
    with use_cassette(path, record_mode="none"):  # replayed with no login at all
        with stack.connect(stack.oauth(login=lambda url: pytest.fail("a replay logs in to nothing"))) as client:
            assert client.call_tool("echo", {"text": "authorised"}).text == "authorised"
    assert stack.person.logins == 1


def test_the_secret_filter_catches_credentials_by_name_and_by_shape():
    from mcpsync._cassettes._secrets import FILTERED, Filter

    secrets = Filter(headers=["X-Tenant"], params=["pin"])
    headers = secrets.headers({"Authorization": "Bearer abc", "X-Api-Key": "k", "X-Auth-Token": "t",
                               "Proxy-Authorization": "p", "X-Client-Secret": "s", "Mcp-Session-Id": "id",
                               "Cookie": "a=b", "X-Tenant": "acme", "Accept": "text/plain", "X-Author": "Ada"})
    assert [k for k, v in headers.items() if v != FILTERED] == ["Accept", "X-Author"]
    message = secrets.json({"params": {"code": "oauth-code", "code_verifier": "v", "client_secret": "s",
                                       "access_token": "a", "DPoP": "proof", "pin": "1234", "maxTokens": 32,
                                       "_meta": {"progressToken": 3}, "note": "Bearer abcdefgh123",
                                       "jwt_inside": "x eyJhbGciOi.eyJzdWIiOiIx.c2lnbmF0dXJl y"},
                            "error": {"code": -32000}})
    params = message["params"]
    assert [params[k] for k in ("code", "code_verifier", "client_secret", "access_token", "DPoP", "pin")] == \
        [FILTERED] * 6
    assert params["maxTokens"] == 32 and params["_meta"] == {"progressToken": 3} and message["error"]["code"] == -32000
    assert params["note"] == f"Bearer {FILTERED}" and "eyJ" not in params["jwt_inside"]
    assert secrets.args(["serve", "--token", "t0k", "--api-key=k3y", "--port", "80"]) == \
        ["serve", "--token", FILTERED, f"--api-key={FILTERED}", "--port", "80"]


# -- record modes -----------------------------------------------------------------------------------------


def test_each_record_mode_records_or_replays_as_documented(tmp_path):
    path = tmp_path / "modes.jsonl"
    server = str(SERVERS / "era_sdk_server.py")

    def run(argv: List[str] = [PY, server]) -> str:
        with mcpsync.connect(argv, probe_timeout=PROBE, timeout=15) as client:
            return client.call_tool("echo", {"text": "mode"}).text

    with pytest.raises(CassetteError, match="does not exist and record_mode is 'none'"):
        with use_cassette(path, record_mode="none"):
            pass
    with use_cassette(path, record_mode="once") as cassette:  # missing: recorded
        assert run() == "mode"
    assert (cassette.recorded, cassette.replayed) == (1, 0)
    path.write_text(path.read_text().replace('"text":"mode","type"', '"text":"edited","type"'))
    with use_cassette(path, record_mode="once") as cassette:  # present: replayed only
        assert run() == "edited"
    assert (cassette.recorded, cassette.replayed) == (0, 1)
    with use_cassette(path, record_mode="none") as cassette:
        assert run() == "edited"
        with pytest.raises(CassetteMismatch, match="holds no connection"):  # a server it lacks is no server
            mcpsync.connect([PY, server, "--legacy-only"], probe_timeout=PROBE, timeout=15)
    with use_cassette(path, record_mode="all") as cassette:  # always recorded, overwritten
        assert run() == "mode"
    assert (cassette.recorded, cassette.replayed) == (1, 0)
    assert '"text":"edited"' not in path.read_text()
    legacy = [PY, server, "--legacy-only"]
    with use_cassette(path, record_mode="new_episodes") as cassette:  # known replayed, new recorded
        assert run() == "mode" and run(legacy) == "mode"
    assert (cassette.recorded, cassette.replayed) == (1, 1)
    with use_cassette(path, record_mode="none") as cassette:  # both now replay
        assert run() == "mode" and run(legacy) == "mode"
    assert cassette.replayed == 2


def test_use_cassette_is_a_decorator_too(tmp_path):
    path = tmp_path / "decorated.jsonl"

    @use_cassette(path)
    def call() -> str:
        with mcpsync.connect([PY, str(SERVERS / "era_sdk_server.py")], probe_timeout=PROBE, timeout=15) as client:
            return client.call_tool("add", {"a": 1, "b": 2}).text

    assert call() == call() == "3.0"
    assert path.exists()


# -- mismatches -------------------------------------------------------------------------------------------


def test_a_request_the_cassette_lacks_names_it_the_closest_recorded_one_and_the_difference(tmp_path):
    path = tmp_path / "mismatch.jsonl"
    argv = [PY, str(SERVERS / "era_sdk_server.py")]
    with use_cassette(path):
        with mcpsync.connect(argv, probe_timeout=PROBE, timeout=15) as client:
            client.call_tool("echo", {"text": "recorded"})
    with use_cassette(path, record_mode="none"):
        with mcpsync.connect(argv, probe_timeout=PROBE, timeout=15) as client:
            with pytest.raises(CassetteMismatch) as caught:
                client.call_tool("echo", {"text": "other"})
    error = caught.value
    text = str(error)
    assert "tools/call" in text and '"other"' in text and '"recorded"' in text and "line " in text
    assert "params.arguments.text" in error.difference
    assert error.closest["params"]["arguments"] == {"text": "recorded"}
    assert error.request["params"]["arguments"] == {"text": "other"}


def test_a_handler_answering_otherwise_than_recorded_is_a_mismatch_of_the_call(tmp_path):
    path = tmp_path / "handler.jsonl"
    argv = [PY, str(SERVERS / "era_sdk_server.py"), "--legacy-only"]  # legacy: sampling is a server request
    with use_cassette(path):
        with mcpsync.connect(argv, probe_timeout=PROBE, **Handlers("teal").options()) as client:
            assert client.call_tool("sample", {"prompt": "A colour?"}).text == "teal"
    with use_cassette(path, record_mode="none"):
        with mcpsync.connect(argv, probe_timeout=PROBE, **Handlers("teal").options()) as client:  # the same answer: replayed
            assert client.call_tool("sample", {"prompt": "A colour?"}).text == "teal"
        with mcpsync.connect(argv, probe_timeout=PROBE, **Handlers("crimson").options()) as client:
            with pytest.raises(CassetteMismatch, match="handler's answer") as caught:
                client.call_tool("sample", {"prompt": "A colour?"})
    assert "crimson" in str(caught.value) and "teal" in str(caught.value)


# -- the file ---------------------------------------------------------------------------------------------


def test_two_recordings_of_one_conversation_are_equal_files(tmp_path):
    argv = [PY, str(SERVERS / "era_sdk_server.py"), "--legacy-only"]
    for name in ("one.jsonl", "two.jsonl"):
        handlers = Handlers()
        with use_cassette(tmp_path / name):
            # a generous probe timeout: a server slow to start under load still answers the probe
            with mcpsync.connect(argv, probe_timeout=PROBE, **handlers.options()) as client:
                client.call_tool("echo", {"text": "same"})
                client.call_tool("sample", {"prompt": "A colour?"})
                client.call_tool("progress", {"steps": 2}, on_progress=lambda *a: None)
    one, two = (tmp_path / "one.jsonl").read_text(), (tmp_path / "two.jsonl").read_text()
    assert one == two
    lines = one.splitlines()
    assert json.loads(lines[0]) == {"format": "mcpsync-cassette", "version": 1}
    assert json.loads(lines[-1])["end"] is True
    assert all(line == json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
               for line in lines)


def _good_cassette(tmp_path: Path) -> Path:
    path = tmp_path / "good.jsonl"
    with use_cassette(path):
        with mcpsync.connect([PY, str(SERVERS / "era_sdk_server.py")], probe_timeout=PROBE, timeout=15) as client:
            client.list_tools()
            client.call_tool("echo", {"text": "x"})
    return path


@pytest.mark.parametrize("damage, expected", [
    (lambda lines: lines[:-1], r"line \d+: the file ends before its end line"),
    (lambda lines: lines[:3] + [lines[3][:len(lines[3]) // 2]] + lines[4:], r"line 4: not JSON"),
    (lambda lines: [lines[0].replace('"version":1', '"version":2')] + lines[1:], r"line 1: cassette format version 2 is newer"),
    (lambda lines: lines[:2] + lines[3:], r"the end line counts \d+ events but the file holds"),
    (lambda lines: lines[:2] + ['{"c":0,"sent":{}}'] + lines[2:], r"line 3: an event has"),
    (lambda lines: lines[:2] + ['{"c":7,"send":{}}'] + lines[2:], r"line 3: the event names connection 7"),
    (lambda lines: lines[:2] + ['{"c":0,"send":{"hello":1}}'] + lines[2:], r"line 3: the send event is not a JSON-RPC"),
    (lambda lines: ["[1,2]"] + lines[1:], r"line 1: a JSON list"),
    (lambda lines: [], r"line 1: the file is empty"),
])
def test_a_truncated_hand_edited_or_newer_cassette_is_a_typed_error_naming_the_line(tmp_path, damage, expected):
    path = _good_cassette(tmp_path)
    lines = damage(path.read_text().splitlines())
    path.write_text("".join(line + "\n" for line in lines))
    with pytest.raises(CassetteError, match=expected):
        with use_cassette(path, record_mode="none"):
            pass


def test_a_cassette_whose_answer_was_edited_out_fails_the_call_at_once_instead_of_hanging(tmp_path):
    path = _good_cassette(tmp_path)
    lines = path.read_text().splitlines()
    answer = max(i for i, line in enumerate(lines) if line.startswith('{"c":0,"recv":{"id":'))
    count = json.loads(lines[-1])["events"]
    kept = lines[:answer] + lines[answer + 1:-1] + [json.dumps({"end": True, "events": count - 1})]
    path.write_text("".join(line + "\n" for line in kept))
    with use_cassette(path, record_mode="none"):
        with mcpsync.connect([PY, str(SERVERS / "era_sdk_server.py")], probe_timeout=PROBE, timeout=60) as client:
            client.list_tools()
            with pytest.raises(CassetteError, match=r"holds no answer to the 'tools/call' request recorded at line \d+"):
                client.call_tool("echo", {"text": "x"}, timeout=60)


def test_a_cassette_cut_inside_its_last_line_is_truncated(tmp_path):
    path = _good_cassette(tmp_path)
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(CassetteError, match="does not end with a newline: the file is truncated"):
        with use_cassette(path):
            pass


# -- Manager, FakeServer, unittest, pytest, mcpsync replay -----------------------------------------------


def test_a_manager_records_every_server_into_one_file_and_replays_them(tmp_path):
    python = missing_later(tmp_path, PY)
    config = {"mcpServers": {
        "dual": {"command": str(python), "args": [str(SERVERS / "era_sdk_server.py")]},
        "legacy": {"command": str(python), "args": [str(SERVERS / "era_sdk_server.py"), "--legacy-only"]},
    }}

    def run() -> Any:
        with mcpsync.Manager(config, cache=False, timeout=15, client_options={"probe_timeout": PROBE}) as manager:
            manager.connect_all(startup_timeout=30)
            tools = {tool.server: tool.qualified_name for tool in manager.tools() if tool.tool.name == "echo"}
            return sorted((name, manager.call_tool(tools[name], {"text": name}).text) for name in ("dual", "legacy"))

    record_then_replay(tmp_path / "fleet.jsonl", run, python.unlink)
    headers = [json.loads(line) for line in (tmp_path / "fleet.jsonl").read_text().splitlines() if '"connection"' in line]
    assert sorted(h["target"]["args"][-1][-9:] for h in headers) == ["gacy-only", "server.py"]


def test_a_fake_server_reads_a_cassette_back(tmp_path):
    path = _good_cassette(tmp_path)
    server = FakeServer.from_cassette(path)
    with server, server.client() as client:
        assert server.name == "era-sdk-server"
        assert "echo" in [tool.name for tool in client.list_tools()]
        assert client.call_tool("echo", {"text": "x"}).text == "x"
        result = client.call_tool("echo", {"text": "not recorded"})
        assert result.is_error and "holds no call of tool 'echo'" in result.text
    server.assert_tool_called("echo", text="x")


def test_the_unittest_mixin_runs_a_test_inside_a_cassette(tmp_path):
    path = tmp_path / "unit.jsonl"
    argv = [PY, str(SERVERS / "era_sdk_server.py")]
    seen: List[str] = []

    class EchoTests(FakeServerMixin, unittest.TestCase):
        def setUp(self) -> None:
            self.cassette = self.use_cassette(path)
            self.client = mcpsync.connect(argv, probe_timeout=PROBE, timeout=15)
            self.addCleanup(self.client.close)

        def test_echo(self) -> None:
            seen.append(self.client.call_tool("echo", {"text": "unit"}).text)
            seen.append("replayed" if self.cassette.replayed else "recorded")

    for _ in range(2):
        outcome = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(
            unittest.defaultTestLoader.loadTestsFromTestCase(EchoTests))
        assert outcome.wasSuccessful(), outcome.errors + outcome.failures
    assert seen == ["unit", "recorded", "unit", "replayed"]


PYTEST_FILE = '''
import sys
import mcpsync
import pytest

ARGV = [sys.executable, {server!r}]

@pytest.mark.mcp_cassette
def test_default_name(mcp_cassette):
    with mcpsync.connect(ARGV, probe_timeout=30, timeout=15) as client:
        assert client.call_tool("echo", {{"text": "marked"}}).text == "marked"
    print("MODE", mcp_cassette.record_mode, mcp_cassette.recorded, mcp_cassette.replayed)

@pytest.mark.mcp_cassette("shared_name", record_mode="once")
def test_named():
    with mcpsync.connect(ARGV, probe_timeout=30, timeout=15) as client:
        assert client.call_tool("add", {{"a": 1, "b": 1}}).text == "2.0"

def test_unmarked(mcp_cassette):
    assert mcp_cassette is None
'''


# Four pytest processes, each bounded at 120 s: ~50 s on a quiet machine, past the 60 s default
# on a loaded one. The test's bound is the sum of its steps' own.
@pytest.mark.timeout(4 * 120)
def test_the_pytest_marker_keeps_cassettes_under_tests_cassettes_and_the_option_sets_the_mode(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_marked.py").write_text(PYTEST_FILE.format(server=str(SERVERS / "era_sdk_server.py")))

    def pytest_run(*options: str) -> str:
        done = subprocess.run([PY, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *options, "tests"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    assert "MODE once 1 0" in pytest_run()
    assert sorted(p.name for p in (tests / "cassettes").iterdir()) == ["shared_name.jsonl", "test_default_name.jsonl"]
    assert "MODE once 0 1" in pytest_run()
    assert "MODE all 1 0" in pytest_run("--mcp-record-mode=all")
    assert "MODE none 0 1" in pytest_run("--mcp-record-mode", "none")


@pytest.mark.timeout(60 + 120)  # a recording, then the SDK client's process, bounded at 120 s
def test_mcpsync_replay_serves_a_cassette_to_the_official_sdk_client(tmp_path):
    path = tmp_path / "served.jsonl"
    argv = [PY, str(SERVERS / "era_sdk_server.py"), "--legacy-only"]
    with use_cassette(path):
        with mcpsync.connect(argv, probe_timeout=PROBE, timeout=15) as client:
            expected_tools = [tool.name for tool in client.list_tools()]
            expected_echo = client.call_tool("echo", {"text": "served"}).text
    script = tmp_path / "sdk_client.py"
    script.write_text(SDK_CLIENT)
    done = subprocess.run([PY, str(script), PY, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["tools"] == expected_tools
    assert report["echo"] == expected_echo
    assert "holds no request" in report["unrecorded"] and "closest recorded" in report["unrecorded"]


SDK_CLIENT = '''
import json, sys
import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    python, cassette = sys.argv[1], sys.argv[2]
    params = StdioServerParameters(command=python, args=["-m", "mcpsync", "replay", cassette])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = [tool.name for tool in (await session.list_tools()).tools]
            echo = (await session.call_tool("echo", {"text": "served"})).content[0].text
            try:
                await session.call_tool("echo", {"text": "never recorded"})
                unrecorded = ""
            except Exception as exc:
                unrecorded = str(exc)
    print(json.dumps({"tools": tools, "echo": echo, "unrecorded": unrecorded}))

anyio.run(main)
'''


# -- no cassette, no cost -----------------------------------------------------------------------------


def test_with_no_cassette_active_nothing_is_intercepted_and_no_tap_is_set():
    transport = mcpsync.create_transport({"command": PY, "args": ["-c", "pass"]})
    try:
        assert _seam.hand_over(transport) is transport
        assert transport.message_tap is None
    finally:
        transport.close()
    assert _seam._interceptor is None


def test_one_cassette_at_a_time(tmp_path):
    with use_cassette(tmp_path / "a.jsonl"):
        with pytest.raises(CassetteError, match="already active"):
            with Cassette(tmp_path / "b.jsonl"):
                pass
    assert _seam._interceptor is None


# -- the docs' and the example's code run -----------------------------------------------------------------


def _docs_blocks() -> List[str]:
    text = (Path(__file__).parent.parent.parent / "docs" / "testing.md").read_text()
    section = text.split("## Cassettes", 1)[1].split("\n## ", 1)[0]
    return [block.split("```", 1)[0] for block in section.split("```python\n")[1:]]


@pytest.mark.timeout(4 * 120)  # four Python processes (two of them pytest), each bounded at 120 s
def test_the_docs_unittest_and_pytest_examples_run_recording_then_replaying(tmp_path):
    blocks = _docs_blocks()
    unit = next(block for block in blocks if "unittest.main()" in block)
    marked = next(block for block in blocks if "@pytest.mark.mcp_cassette" in block)
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "demo_server.py").write_text(
        (Path(__file__).parent.parent.parent / "examples" / "demo_server.py").read_text())
    (tmp_path / "tests").mkdir()
    (tmp_path / "test_doc_unittest.py").write_text(unit)
    (tmp_path / "tests" / "test_doc_pytest.py").write_text(marked)
    for _ in ("record", "replay"):
        for argv in ([PY, "test_doc_unittest.py"], [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]):
            done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in (tmp_path / "tests" / "cassettes").iterdir()) == \
        ["demo-add.jsonl", "shout.jsonl", "test_echo.jsonl"]


def test_the_cassette_example_records_then_replays(tmp_path):
    example = Path(__file__).parent.parent.parent / "examples" / "cassette.py"
    env = dict(os.environ, TMPDIR=str(tmp_path))
    done = subprocess.run([PY, str(example)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "record: ok" in done.stdout and "replay: ok" in done.stdout


def test_a_cassette_recorded_by_another_mcpsync_version_still_replays(tmp_path):
    path = _good_cassette(tmp_path)
    path.write_text(path.read_text().replace('"name":"mcpsync","version":"', '"name":"mcpsync","version":"0.0.0-old'))
    assert "0.0.0-old" in path.read_text()
    with use_cassette(path, record_mode="none"):
        with mcpsync.connect([PY, str(SERVERS / "era_sdk_server.py")], probe_timeout=PROBE, timeout=15) as client:
            assert client.call_tool("echo", {"text": "x"}).text == "x"
