"""The output gate, end to end (issue 20, item 7): the ``mcpsync`` command against a server whose
every text carries terminal control sequences shows them, escaped, and never lets one through.

Each test runs the real command (``python -m mcpsync``) as a subprocess against
``tests/servers/hostile_text.py``, whose tool names, descriptions, results, progress messages,
prompts, resources, SKILL.md body, error messages and stderr lines all hold the same payload: a
cursor-up-and-erase, an OSC 52 clipboard write, a window title, a C1 CSI, a right-to-left override
and a carriage return. The bytes written to stdout and stderr must hold none of those characters raw,
and the payload must still be visible, escaped.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

from ..conftest import ROOT, server_argv
from ..servers.hostile_text import PAYLOAD

HOSTILE = server_argv("hostile_text.py")
# What must never reach a terminal raw: C0 but newline and tab, DEL and C1, bidi controls.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# The payload as the gate shows it (one line: the carriage return is escaped too).
VISIBLE = "\\x1b[1A\\x1b[2K\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b]0;pwned\\x07\\x9b2J\\u202eevil\\u202csafe\\x0dEVIL"


def run(tmp_path: Path, *args: str) -> Tuple[int, str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("XDG_", "MCPSYNC_"))}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"),
               XDG_CACHE_HOME=str(tmp_path / ".cache"), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "mcpsync", *args, "--", *HOSTILE], cwd=tmp_path, env=env,
                          capture_output=True, timeout=60)
    # strict: a lone surrogate written raw would not even be UTF-8
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")


def assert_gated(*texts: str) -> None:
    for text in texts:
        found = RAW.search(text)
        assert found is None, f"raw {found.group()!r} reached the terminal in {text!r}"


COMMANDS: List[Tuple[str, ...]] = [
    ("tools",), ("call", "echo" + PAYLOAD, "{}"), ("prompts",), ("prompt", "greet", "{}"), ("resources",),
    ("read", "file:///hostile.txt"), ("skill", "hostile"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda words: words[0])
def test_server_text_is_shown_escaped_never_obeyed(tmp_path: Path, command: Tuple[str, ...]) -> None:
    code, out, err = run(tmp_path, *command)
    assert code == 0, err
    assert_gated(out, err)
    assert VISIBLE in out  # still there to read, one line, escaped


def test_a_server_error_message_is_shown_escaped(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, "call", "fail", "{}")
    assert code == 6
    assert_gated(out, err)
    assert err.startswith("mcpsync: error: ") and "failed \\x1b[1A\\x1b[2K\\x1b]52;c;" in err
    assert len(err.splitlines()) == 1


def test_relayed_server_stderr_and_logs_are_shown_escaped(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, "--debug", "tools")
    assert code == 0, err
    assert_gated(out, err)
    assert "got tools/list " + VISIBLE in err  # the server's own stderr line, relayed by --debug


@pytest.mark.parametrize("command", COMMANDS + [("skills",)], ids=lambda words: words[0])
def test_json_output_is_exact_json_with_every_control_escaped(tmp_path: Path, command: Tuple[str, ...]) -> None:
    code, out, err = run(tmp_path, "--json", *command)
    assert code == 0, err
    assert_gated(out, err)
    value = json.loads(out)
    if command[0] != "skills":  # the one listing with no payload in it
        assert any(PAYLOAD in text for text in strings(value))  # the exact strings, nothing lost


def strings(value: object) -> List[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in strings(key) + strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in strings(item)]
    return []


def test_progress_messages_are_escaped_and_the_own_progress_line_is_kept(tmp_path: Path) -> None:
    import pty

    env = {key: value for key, value in os.environ.items() if not key.startswith(("XDG_", "MCPSYNC_"))}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"),
               XDG_CACHE_HOME=str(tmp_path / ".cache"), PYTHONPATH=str(ROOT))
    master, slave = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "mcpsync", "call", "echo" + PAYLOAD, "{}", "--", *HOSTILE],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=slave, timeout=60)
    finally:
        os.close(slave)
    chunks: List[bytes] = []
    try:
        while True:
            chunk = os.read(master, 4096)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:  # EIO once the writer side is closed and drained
        pass
    finally:
        os.close(master)
    assert proc.returncode == 0
    terminal = b"".join(chunks).decode("utf-8")
    assert "progress 1/2 " + VISIBLE[:60] in terminal  # the message, escaped (cut to the line's width)
    assert "\r\x1b[K" in terminal  # mcpsync's own sequence: clear the progress line
    assert_gated(terminal.replace("\r\x1b[K", ""), proc.stdout.decode("utf-8"))


# -- one writer ---------------------------------------------------------------------------------

CLI = Path(__file__).resolve().parent.parent.parent / "mcpsync" / "cli"
WRITER = "_output.py"


def _bypasses(path: Path) -> List[str]:
    """Calls in ``path`` that would write to a terminal without the CLI's writer."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    allowed = set()
    if path.name == WRITER:  # the writer itself: its body is the one place that touches the streams
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in ("_emit", "stderr_is_terminal"):
                allowed.update(id(inner) for inner in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in allowed:
            continue
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("print", "input"):
                found.append(f"{path.name}:{node.lineno} {func.id}()")
            writer = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "out"
            if isinstance(func, ast.Attribute) and not writer and func.attr in (
                    "write", "writelines", "print_help", "print_usage", "print_exc", "print_exception"):
                found.append(f"{path.name}:{node.lineno} .{func.attr}()")
        if isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr", "__stdout__", "__stderr__"):
            found.append(f"{path.name}:{node.lineno} .{node.attr}")
    return found


def test_nothing_in_the_cli_writes_to_a_terminal_but_through_the_writer() -> None:
    files = sorted(CLI.glob("*.py"))
    assert any(path.name == WRITER for path in files)
    assert [hit for path in files for hit in _bypasses(path)] == []


# -- the pieces ---------------------------------------------------------------------------------


def test_the_library_progress_bar_shows_the_servers_message_escaped() -> None:
    import io

    from mcpsync import ProgressBar

    stream = io.StringIO()
    with ProgressBar("work", file=stream, use_tqdm=False) as bar:
        bar(1, 2, PAYLOAD)
    drawn = stream.getvalue()
    assert drawn.startswith("\r") and drawn.endswith("\x1b[K\n")  # the bar's own sequences stay
    assert_gated(drawn[1:-4])
    assert drawn[1:-4].endswith("1/2 " + VISIBLE)


def test_own_sequences_pass_the_writer_and_nothing_built_from_them_does(capsys: pytest.CaptureFixture[str]) -> None:
    from mcpsync.cli import _output as out

    out.write(out.CLEAR_LINE, "a\x1b[2Jb\n", err=True)
    out.write(out.CLEAR_LINE + "\x1b]0;t\x07")  # a str built from an Own one is outside text again
    out.server_lines(["boom \x1b[1A", "\u202eok\r"])
    captured = capsys.readouterr()
    assert captured.err == "\r\x1b[Ka\\x1b[2Jb\n  boom \\x1b[1A\n  \\u202eok\\x0d\n"
    assert captured.out == "\\x0d\\x1b[K\\x1b]0;t\\x07"


def test_an_argument_quoted_back_in_a_usage_error_is_shown_escaped(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "mcpsync", "bad\x1b]0;t\x07"], cwd=tmp_path, env=env,
                          capture_output=True, timeout=60)
    assert proc.returncode == 2
    err = proc.stderr.decode("utf-8")
    assert_gated(err)
    assert "invalid choice: 'bad\\x1b]0;t\\x07'" in err
