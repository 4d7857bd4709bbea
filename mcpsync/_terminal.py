"""The output gate: text from a server or a config file made safe to print to a terminal.

Anything a server sent (tool names, descriptions, results, progress messages, SKILL.md text,
error messages, stderr lines) or a project file holds (a command, its args, env values) may carry
terminal control sequences: ESC sequences that move the cursor, erase lines, set the window title
or write the clipboard (OSC 52), bidi overrides that reorder what is shown, invisible format
characters that hide text. :func:`shown` is the one function every such string passes before it
reaches stdout or stderr: each of those characters is written as a visible escape (``\\x1b``,
``\\u202e``) instead of being interpreted. mcpsync's own escape sequences (its progress line) are
written by mcpsync's own code and never pass through here.

JSON output (``--json``) passes :func:`shown_json` instead: the same characters are written as
JSON ``\\u`` escapes, so the output stays exact JSON (it parses to the very strings the server sent)
while no control reaches the terminal. (``json.dumps`` escapes C0 controls itself, but with
``ensure_ascii=False`` it writes C1 controls, bidi overrides and invisible characters raw.)

This is a leaf module: it imports nothing of mcpsync. Pure functions; safe from any thread.
"""

from __future__ import annotations

import re
from typing import Callable, Match

__all__ = ["shown", "shown_json", "is_safe"]

# Characters that change what a terminal shows without being shown themselves, beyond C0/C1:
# bidi embeddings/overrides/isolates and marks, zero-width and other invisible format characters,
# line/paragraph separators (some terminals start a new line), the soft hyphen.
_INVISIBLE = frozenset(
    [0x00AD, 0x061C, 0x180E, 0x2028, 0x2029, 0xFEFF]
    + list(range(0x200B, 0x2010))  # zero-width space/joiners, LRM, RLM
    + list(range(0x202A, 0x202F))  # LRE, RLE, PDF, LRO, RLO
    + list(range(0x2060, 0x2070))  # word joiner, invisible operators, LRI/RLI/FSI/PDI, ...
    + list(range(0xFFF9, 0xFFFC))  # interlinear annotation
)

def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _unsafe(ch: str, lines: bool) -> bool:
    code = ord(ch)
    if code < 0x20:
        return not (lines and ch in "\n\t")
    if 0x7F <= code <= 0x9F or code in _INVISIBLE:
        return True
    if code < 0x80:
        return False
    # Other format characters (tags, language marks), unassigned surrogates and private use do
    # not print as themselves either. (unicodedata loads here, not at `import mcpsync`.)
    import unicodedata

    return unicodedata.category(ch) in ("Cf", "Cs", "Co", "Cn")


# Runs of characters that may need escaping: everything but printable ASCII (and, with ``lines``,
# newline and tab). Most runs (words of other scripts) are printable as a whole, which
# str.isprintable() tells at C speed; only a run that is not is looked at character by character.
_RUNS = re.compile(r"[^\x20-\x7e]+")
_RUNS_LINES = re.compile(r"[^\x20-\x7e\n\t]+")


_BLOCK = 4096


def _gate(s: str, lines: bool, escape: Callable[[str], str]) -> str:
    """``s`` with each unsafe character replaced by ``escape(ch)``.

    Linear, and fast where it matters: a text that is printable as a whole (any script) is
    told so by str.isprintable() at C speed; so is each line and each block of a long one,
    and only a block that is not printable is looked at run by run.
    """
    if s.isprintable():
        return s  # the common case: nothing to do
    if lines and "\n" in s:
        return "\n".join(_gate(part, lines, escape) for part in s.split("\n"))
    runs = _RUNS_LINES if lines else _RUNS

    def fix(match: "Match[str]") -> str:
        run = match.group()
        if run.isprintable():  # letters, marks, symbols, ordinary spaces: all safe
            return run
        return "".join(escape(ch) if _unsafe(ch, lines) else ch for ch in run)

    if len(s) <= _BLOCK:
        return runs.sub(fix, s)
    blocks = (s[i:i + _BLOCK] for i in range(0, len(s), _BLOCK))
    return "".join(block if block.isprintable() else runs.sub(fix, block) for block in blocks)


def is_safe(text: str, *, lines: bool = False) -> bool:
    """True when ``text`` holds nothing :func:`shown` would escape."""
    return _gate(text, lines, _escape) == text


def shown(text: object, *, lines: bool = False) -> str:
    """``text`` with every control, bidi and invisible character written visibly.

    ``lines=True`` keeps newlines and tabs (for multi-line text such as a result or a stderr
    tail); otherwise they are escaped too, so that one value stays on one line (a table cell,
    a prompt). A carriage return is always escaped: it would let a later part of a line overwrite
    an earlier one. Accepts any object (``str()`` of it is shown); never raises.
    """
    return _gate(text if isinstance(text, str) else str(text), lines, _escape)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code > 0xFFFF:  # JSON spells a character beyond the BMP as a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def shown_json(text: str) -> str:
    """JSON text (as ``json.dumps`` writes it) with every character :func:`shown` would escape
    written as a JSON ``\\uXXXX`` escape: the same JSON value, safe on a terminal.

    Newlines and tabs outside strings (indentation) are kept; inside strings ``json.dumps`` has
    already escaped them. Letters of any script are kept as they are. Never raises.
    """
    return _gate(text, True, _json_escape)
