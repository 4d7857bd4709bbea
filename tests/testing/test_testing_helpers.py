"""mcpsync.testing: the unittest mixin, the pytest plugin, the examples, and keeping imports light."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import unittest
from importlib import metadata
from typing import Any

import pytest

from mcpsync.testing import FakeServer, FakeServerMixin

from ..conftest import ROOT


def _run(case: type) -> unittest.TestResult:
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(case)
    return unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)


class _Calc(FakeServerMixin, unittest.TestCase):
    def setUp(self) -> None:
        server = self.useFakeServer(FakeServer("calc"))
        server.add_tool(lambda a, b: a + b, name="add")
        self.client = server.client()


def test_the_mixin_passes_and_fails_like_other_assertions() -> None:
    class Cases(_Calc):
        def test_called(self) -> None:
            self.client.call_tool("add", {"a": 1, "b": 2})
            self.assertToolCalled("add")
            self.assertToolCalled("add", a=1)
            self.assertToolCallCount("add", 1)
            self.assertToolNotCalled("sub")

        def test_wrong_arguments(self) -> None:
            self.client.call_tool("add", {"a": 1, "b": 2})
            self.assertToolCalled("add", a=5)

        def test_not_called(self) -> None:
            self.assertToolCalled("add")

        def test_called_but_should_not_be(self) -> None:
            self.client.call_tool("add", {"a": 1, "b": 2})
            self.assertToolNotCalled("add")

        def test_count(self) -> None:
            self.assertToolCallCount("add", 2)

    result = _run(Cases)
    assert result.testsRun == 5 and not result.errors
    failures = {case.id().rsplit(".", 1)[1]: text.strip().splitlines()[-1] for case, text in result.failures}
    assert failures == {
        "test_wrong_arguments": "AssertionError: Tool 'add' was not called with {'a': 5}; its calls: "
                                "[{'a': 1, 'b': 2}]",
        "test_not_called": "AssertionError: Tool 'add' was not called (called: none)",
        "test_called_but_should_not_be": "AssertionError: Tool 'add' was called 1 time(s): [{'a': 1, 'b': 2}]",
        "test_count": "AssertionError: Tool 'add' was called 0 time(s), not 2: []",
    }


def test_the_mixin_closes_the_server_and_its_clients() -> None:
    made = []

    class Cases(_Calc):
        def test_it(self) -> None:
            made.append(self.client)

    assert _run(Cases).wasSuccessful()
    assert not made[0].connected


def test_the_mixin_says_when_no_server_was_set() -> None:
    class Cases(FakeServerMixin, unittest.TestCase):
        def test_it(self) -> None:
            self.assertToolCalled("add")

    result = _run(Cases)
    assert "call self.useFakeServer(server) in setUp" in result.failures[0][1]


def test_the_fixture_gives_a_server_named_after_the_test(fake_mcp_server: FakeServer) -> None:
    fake_mcp_server.add_tool(lambda: "pong", name="ping_tool")
    client = fake_mcp_server.client()  # closed by the fixture
    assert client.call_tool("ping_tool").text == "pong"
    assert fake_mcp_server.name == "test_the_fixture_gives_a_server_named_after_the_test"


@pytest.mark.fake_mcp_server(name="configured", version="9.9", page_size=1)
def test_the_marker_passes_server_options(fake_mcp_server: FakeServer) -> None:
    assert (fake_mcp_server.name, fake_mcp_server.version, fake_mcp_server.page_size) == ("configured", "9.9", 1)


def test_the_plugin_is_an_entry_point() -> None:
    found = metadata.entry_points()
    group = found.select(group="pytest11") if hasattr(found, "select") else found.get("pytest11", [])  # 3.9: a dict
    plugins = {entry.name: entry.value for entry in group}
    assert plugins.get("mcpsync") == "mcpsync.testing.pytest_plugin"


def _modules_after(statement: str) -> Any:
    code = f"import sys; {statement}; print(' '.join(sorted(m for m in sys.modules if m.startswith('mcpsync'))))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.split()


def test_import_mcpsync_does_not_import_the_testing_package() -> None:
    assert not [m for m in _modules_after("import mcpsync") if m.startswith("mcpsync.testing")]


def test_the_plugin_loads_none_of_the_fake_server() -> None:
    loaded = [m for m in _modules_after("import mcpsync.testing.pytest_plugin") if m.startswith("mcpsync.testing")]
    assert loaded == ["mcpsync.testing", "mcpsync.testing.pytest_plugin"]
    assert "mcpsync.testing._server" in _modules_after("from mcpsync.testing import FakeServer")


@pytest.mark.slow
@pytest.mark.timeout(2 * 120)  # two Python processes (one of them pytest), each bounded at 120 s
def test_the_examples_pass() -> None:
    pytest_run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "examples/test_with_fakeserver_pytest.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert pytest_run.returncode == 0, pytest_run.stdout[-3000:] + pytest_run.stderr[-3000:]
    assert " passed" in pytest_run.stdout and "failed" not in pytest_run.stdout
    unittest_run = subprocess.run([sys.executable, "examples/test_with_fakeserver_unittest.py"], cwd=ROOT,
                                  capture_output=True, text=True, timeout=120)
    assert unittest_run.returncode == 0, unittest_run.stderr[-3000:]
    assert unittest_run.stderr.rstrip().endswith("OK")


# Records each Python file the project's own pytest run would collect, and stops there:
# importing every test module (a full --collect-only) took over a minute on a loaded machine.
_LIST_FILES_PLUGIN = """
import os
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_ignore_collect(collection_path, config):
    ignored = yield
    if not ignored and collection_path.suffix == ".py" and collection_path.name != "conftest.py":
        with open(os.environ["MCPSYNC_COLLECTED"], "a") as out:
            out.write(str(collection_path.relative_to(config.rootpath)) + "\\n")
        return True
    return ignored
"""


def test_the_project_run_does_not_collect_the_examples(tmp_path: Any) -> None:
    (tmp_path / "list_files_plugin.py").write_text(_LIST_FILES_PLUGIN)
    listing = tmp_path / "collected.txt"
    env = dict(os.environ, MCPSYNC_COLLECTED=str(listing),
               PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "list_files_plugin"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=50)
    assert run.returncode in (0, 5), run.stdout[-3000:] + run.stderr[-3000:]  # 5: no tests (none imported)
    files = listing.read_text().split()
    assert "tests/testing/test_testing_helpers.py" in files
    assert not [f for f in files if f.startswith("examples")], files
