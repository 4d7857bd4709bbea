"""Output limits (issue 15 item 13): max_output cuts a tool result to a head and spills the whole of it
to a private file whose path the result carries."""

from __future__ import annotations

import base64
import json
import os
import pickle
import stat
from pathlib import Path
from typing import Iterator

import pytest

from mcpsync import CallToolResult, MCPSyncError, SpilledResult
from mcpsync.manager import Manager
from mcpsync.testing import FakeServer

from ..conftest import server_argv

BIG = "0123456789" * 10_000  # 100,000 bytes of text
PNG = base64.b64encode(b"\x89PNG" + bytes(3000)).decode()


@pytest.fixture
def spill_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "spill"
    monkeypatch.setenv("MCPSYNC_OUTPUT_DIR", str(folder))
    return folder


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    with FakeServer("big") as server:
        @server.tool()
        def dump(text: str = BIG) -> str:
            return text

        @server.tool()
        def mixed() -> CallToolResult:
            return CallToolResult({"content": [{"type": "text", "text": "a picture:"},
                                               {"type": "image", "data": PNG, "mimeType": "image/png"}],
                                   "structuredContent": {"rows": list(range(500))}})

        yield server


def test_a_result_over_max_output_keeps_its_head_and_spills_the_whole_of_it(fake: FakeServer,
                                                                            spill_dir: Path) -> None:
    with fake.client() as client:
        result = client.call_tool("dump", max_output=1000)
    assert isinstance(result, SpilledResult) and isinstance(result, CallToolResult)
    assert result.full_size == len(BIG) and result.max_output == 1000
    head, note = result.content
    assert head.text == BIG[:1000]  # type: ignore[union-attr]
    assert "100,000 bytes" in note.text and result.spill_path in note.text  # type: ignore[union-attr]
    path = Path(result.spill_path)
    assert path.parent == spill_dir and path.suffix == ".txt"
    assert path.read_text() == BIG
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(spill_dir.stat().st_mode) == 0o700


def test_binary_blocks_that_do_not_fit_are_named_and_kept_in_the_json_file(fake: FakeServer,
                                                                          spill_dir: Path) -> None:
    with fake.client() as client:
        result = client.call_tool("mixed", max_output=100)
    assert isinstance(result, SpilledResult)
    texts = [block.text for block in result.content]  # type: ignore[union-attr]
    assert texts[0] == "a picture:"
    assert texts[1].startswith("[image/png image block of 3,004 bytes left out")
    assert result.structured_content is None  # did not fit: it is in the file
    whole = json.loads(Path(result.spill_path).read_text())
    assert Path(result.spill_path).suffix == ".json"
    assert whole["content"][1]["data"] == PNG and whole["structuredContent"] == {"rows": list(range(500))}


def test_a_result_within_the_cap_is_untouched(fake: FakeServer, spill_dir: Path) -> None:
    with fake.client() as client:
        small = client.call_tool("dump", {"text": "short"}, max_output=1000)
        plain = client.call_tool("dump")
    assert type(small) is CallToolResult and small.text == "short"
    assert type(plain) is CallToolResult and plain.text == BIG
    assert not spill_dir.exists()
    with pytest.raises(ValueError, match="max_output must be a positive"):
        with fake.client() as client:
            client.call_tool("dump", max_output=0)


def test_utf8_heads_are_cut_at_a_character_boundary(fake: FakeServer, spill_dir: Path) -> None:
    with fake.client() as client:
        result = client.call_tool("dump", {"text": "é" * 1000}, max_output=101)
    assert isinstance(result, SpilledResult) and result.full_size == 2000
    assert result.content[0].text == "é" * 50  # type: ignore[union-attr]
    assert Path(result.spill_path).read_text(encoding="utf-8") == "é" * 1000


def test_a_spilled_result_pickles_with_its_path(fake: FakeServer, spill_dir: Path) -> None:
    with fake.client() as client:
        result = client.call_tool("dump", max_output=10)
    copy = pickle.loads(pickle.dumps(result))
    assert isinstance(copy, SpilledResult) and copy.spill_path == result.spill_path and copy == result
    assert "spill_path=" in repr(result)


def test_the_manager_applies_the_servers_max_output_and_the_calls(spill_dir: Path, tmp_path: Path) -> None:
    argv = server_argv("slow_start.py")
    config = {"mcpServers": {"capped": {"command": argv[0], "args": argv[1:], "max_output": 10},
                             "free": {"command": argv[0], "args": argv[1:]}}}
    with Manager(config, cache=tmp_path / "cache") as manager:
        assert manager.wait(30)
        capped = manager.call_tool("mcp_capped_echo", {"text": "x" * 50})
        assert isinstance(capped, SpilledResult) and capped.content[0].text == "x" * 10  # type: ignore[union-attr]
        assert Path(capped.spill_path).read_text() == "x" * 50
        free = manager.call_tool("mcp_free_echo", {"text": "x" * 50})
        assert type(free) is CallToolResult
        per_call = manager.call_tool("mcp_free_echo", {"text": "x" * 50}, max_output=20)
        assert isinstance(per_call, SpilledResult) and per_call.max_output == 20
        looser = manager.call_tool("mcp_capped_echo", {"text": "x" * 50}, max_output=100)
        assert type(looser) is CallToolResult  # the call's cap wins over the server's


def test_without_an_output_dir_a_private_temp_directory_is_made(fake: FakeServer,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPSYNC_OUTPUT_DIR", raising=False)
    with fake.client() as client:
        result = client.call_tool("dump", max_output=10)
    assert isinstance(result, SpilledResult)
    folder = Path(result.spill_path).parent
    try:
        assert folder.name.startswith("mcpsync-output-")
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    finally:
        os.remove(result.spill_path)


def test_many_blocks_left_out_make_one_line(fake: FakeServer, spill_dir: Path) -> None:
    @fake.tool()
    def many() -> CallToolResult:
        images = [{"type": "image", "data": PNG, "mimeType": "image/png"} for _ in range(1000)]
        return CallToolResult({"content": [{"type": "text", "text": "start"}, *images,
                                           {"type": "text", "text": "x" * 5000}]})

    with fake.client() as client:
        result = client.call_tool("many", max_output=1000)
    assert isinstance(result, SpilledResult)
    texts = [block.text for block in result.content]  # type: ignore[union-attr]
    assert texts[0] == "start" and texts[2] == "x" * 995  # the line for the images stands where they stood
    assert texts[1] == "[1,000 blocks left out (image/png image; 3,004,000 bytes): see the spill file]"
    assert texts[3].startswith("[mcpsync: output truncated") and len(texts) == 4


def test_a_spill_file_that_cannot_be_written_raises_our_error_with_the_whole_result(
        fake: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the spill directory should be")
    monkeypatch.setenv("MCPSYNC_OUTPUT_DIR", str(blocker))
    with fake.client() as client:
        with pytest.raises(MCPSyncError, match="MCPSYNC_OUTPUT_DIR") as caught:
            client.call_tool("dump", max_output=1000)
        assert isinstance(caught.value, OSError) and isinstance(caught.value.__cause__, OSError)
        assert caught.value.result.text == BIG  # type: ignore[attr-defined]  # nothing of the answer is lost
        assert client.call_tool("dump", {"text": "small"}, max_output=1000).text == "small"  # still usable
