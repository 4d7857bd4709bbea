"""Reading a SKILL.md's YAML frontmatter, with no YAML library, for the skills extension's checks.

A skill's entry carries its frontmatter as JSON; the client must compare that with what the
``SKILL.md`` it reads actually says (:mod:`mcpsync._features.skills`). mcpsync depends on no YAML
package, so this module reads the part of YAML that frontmatter is written in: block mappings
and sequences by indentation, plain, single- and double-quoted scalars, ``|`` and ``>`` block
scalars, one-line flow sequences and mappings, and comments. Scalars resolve as YAML 1.2's core
schema does (``null``, booleans, integers, floats; everything else is a string), the schema the
JSON of an entry is made with. Anything else (anchors, aliases, tags, complex keys) is refused
with :class:`FrontmatterError`: a check that cannot read the file fails closed.

The text comes from a server, so reading it is bounded: the frontmatter block may hold at most
:data:`MAX_FRONTMATTER_CHARS` characters and nest at most :data:`MAX_DEPTH` collections deep,
every line is read by a hand scan in time linear in its length (no backtracking pattern), and
every failure, whatever caused it (an integer too long for ``int``, say), is a
:class:`FrontmatterError` naming what was wrong.

Pure functions: no threads, no I/O.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["MAX_DEPTH", "MAX_FRONTMATTER_CHARS", "FrontmatterError", "parse_frontmatter", "same_value",
           "split_frontmatter"]

#: The most characters the frontmatter block (between the fences) may hold: 64 KiB of text.
#: Real frontmatter is a few hundred; the rest of a SKILL.md (its body) is not limited here.
MAX_FRONTMATTER_CHARS = 64 * 1024
#: The deepest nesting of block and flow collections read; deeper is refused, never recursed into.
MAX_DEPTH = 100
#: The most digits a plain integer may have (Python's own limit for ``int(str)``, stated here).
MAX_INT_DIGITS = 4300

_INT = re.compile(r"^[-+]?[0-9]+$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_OCTAL = re.compile(r"^0o[0-7]+$")
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_PLAIN_KEY_NOT_FIRST = set(" \t#'\"[]{},&*!|>%@`-")
#: Plain scalars that are not strings, by their exact spelling (YAML 1.2's core schema).
_CONSTANTS: Dict[str, Any] = {
    **dict.fromkeys(("", "~", "null", "Null", "NULL")),
    **dict.fromkeys(("true", "True", "TRUE"), True),
    **dict.fromkeys(("false", "False", "FALSE"), False),
}
#: The infinities and not-a-number, by their spelling in lower case.
_SPECIAL_FLOATS: Dict[str, float] = {".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf, ".nan": math.nan}


class FrontmatterError(ValueError):
    """The text has no frontmatter, or frontmatter this reader does not understand; the text says which."""


def split_frontmatter(text: str) -> Tuple[str, str]:
    """``(frontmatter, body)`` of a SKILL.md: the YAML between the leading ``---`` fences, and what follows.

    Raises:
        FrontmatterError: the text does not begin with a ``---`` fenced block.
    """
    lines = (text[1:] if text.startswith("\ufeff") else text).splitlines(keepends=True)
    if not lines or not _is_fence(lines[0]):
        raise FrontmatterError("the file does not begin with a '---' frontmatter block")
    size = 0
    for index in range(1, len(lines)):
        if _is_fence(lines[index]):
            return "".join(lines[1:index]), "".join(lines[index + 1:])
        size += len(lines[index])
        if size > MAX_FRONTMATTER_CHARS:
            raise FrontmatterError(f"the frontmatter block is longer than {MAX_FRONTMATTER_CHARS} characters "
                                   "(the most this reader accepts)")
    raise FrontmatterError("the frontmatter block is never closed with '---'")


def _is_fence(line: str) -> bool:
    """``---`` alone on the line, trailing blanks allowed (a fixed-size check: a long line costs nothing)."""
    line = line.rstrip("\r\n")
    return line.startswith("---") and not line[3:].strip(" \t")


def parse_frontmatter(text: str) -> Dict[str, Any]:
    """The frontmatter of a SKILL.md as a JSON-like dict.

    Raises:
        FrontmatterError: no frontmatter block, YAML this reader does not support, or a top level
            that is not a mapping.
    """
    yaml_text, _body = split_frontmatter(text)
    try:
        return _parse(yaml_text)
    except FrontmatterError:
        raise
    except (RecursionError, MemoryError) as exc:  # a backstop: depth and size are refused before this
        raise FrontmatterError(f"the frontmatter is too deeply nested or too large to read "
                               f"({type(exc).__name__})") from exc
    except (ValueError, TypeError, IndexError, KeyError) as exc:  # a backstop: no foreign error leaves
        raise FrontmatterError(f"the frontmatter cannot be read ({type(exc).__name__}: {_clip(str(exc))})") from exc


def _parse(yaml_text: str) -> Dict[str, Any]:
    lines = [(len(raw) - len(raw.lstrip(" ")), raw.strip()) for raw in
             (_strip_comment(line.rstrip("\r\n")) for line in yaml_text.splitlines())]
    reader = _Reader([(indent, content) for indent, content in lines])
    if reader.peek() is None:
        return {}
    value = reader.block(reader.peek_indent())
    if reader.peek() is not None:
        raise FrontmatterError(f"unexpected line in frontmatter: {_clip(str(reader.peek()))!r}")
    if not isinstance(value, dict):
        raise FrontmatterError("the frontmatter is not a mapping")
    return value


def _clip(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters for an error message (a hostile line may be 64 KiB)."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _split_key(content: str) -> Optional[Tuple[str, str]]:
    """``(key, rest)`` of a ``key: value`` line, or None: a hand scan, linear in the line's length.

    The key is a double-quoted string (JSON escapes), a single-quoted string (``''`` for a quote),
    or a plain run with no ``#`` that does not start with an indicator character (``-`` is allowed
    when a non-blank follows it); it ends at the first ``:`` followed by a blank or the line's end.
    ``key`` comes back as written (quotes kept, outer blanks stripped).
    """
    if not content:
        return None
    if content[0] in "\"'":
        return _split_quoted_key(content)
    start = _plain_key_start(content)
    colon = _key_colon(content, start) if start else -1
    if colon < 0 or "#" in content[1:colon]:
        return None
    return content[:colon].strip(), content[colon + 1:]


def _split_quoted_key(content: str) -> Optional[Tuple[str, str]]:
    """:func:`_split_key` for a key in quotes: the quote must close, and ``:`` follow it after blanks."""
    end = _quote_end(content, 0)
    if end >= len(content):
        return None
    colon = end + 1
    while colon < len(content) and content[colon] in " \t":
        colon += 1
    if content[colon:colon + 1] != ":" or content[colon + 1:colon + 2] not in ("", " ", "\t"):
        return None
    return content[:end + 1], content[colon + 1:]


def _plain_key_start(content: str) -> int:
    """Where the search for a plain key's ``:`` begins, or 0 if ``content`` cannot start a plain key."""
    first = content[0]
    if first == "-":
        return 0 if len(content) < 2 or content[1] == "#" or content[1].isspace() else 2
    if first in _PLAIN_KEY_NOT_FIRST or first.isspace():
        return 0
    return 1


def _key_colon(content: str, start: int) -> int:
    """The first ``:`` at or after ``start`` that a blank or the line's end follows, or -1."""
    colon = content.find(":", start)
    while colon >= 0 and content[colon + 1:colon + 2] not in ("", " ", "\t"):
        colon = content.find(":", colon + 1)
    return colon


def _quote_end(text: str, start: int) -> int:
    """The index of the quote closing the one at ``start``, or ``len(text)`` or more if it never closes.

    Inside double quotes a backslash escapes the next character; inside single quotes ``''`` is a
    quote. One pass, linear in the text's length.
    """
    quote = text[start]
    end = start + 1
    while end < len(text):
        char = text[end]
        if quote == '"' and char == "\\":
            end += 2
        elif char != quote:
            end += 1
        elif quote == "'" and text[end + 1:end + 2] == "'":
            end += 2
        else:
            return end
    return end


def same_value(left: Any, right: Any) -> bool:
    """JSON equality: booleans are not numbers, ``1 == 1.0``, mappings and lists compared member by member."""
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same_value(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(same_value(a, b) for a, b in zip(left, right))
    return _same_scalar(left, right)


def _same_scalar(left: Any, right: Any) -> bool:
    """:func:`same_value` for anything but two mappings or two lists."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return left == right or _both_nan(left, right)
    return type(left) is type(right) and bool(left == right)


def _both_nan(left: float, right: float) -> bool:
    return isinstance(left, float) and isinstance(right, float) and math.isnan(left) and math.isnan(right)


def _strip_comment(line: str) -> str:
    """``line`` without a trailing ``# comment`` (a ``#`` inside quotes, or not after a space, is kept).

    A quote opens at the line's start or after a blank or one of ``:-[{,``, and closes as
    :func:`_quote_end` reads it (so an escaped ``\\"`` or a doubled ``''`` does not close it).
    """
    index = 0
    while index < len(line):
        before = line[index - 1] if index else " "
        if line[index] in "'\"" and before in " \t:-[{,":
            index = _quote_end(line, index) + 1
        elif line[index] == "#" and before in " \t":
            return line[:index].rstrip()
        else:
            index += 1
    return line


class _Reader:
    """A cursor over ``(indent, content)`` lines; blank lines keep their place (block scalars need them)."""

    def __init__(self, lines: List[Tuple[int, str]]) -> None:
        self.lines = lines
        self.pos = 0
        self.depth = 0

    def _skip_blank(self) -> None:
        while self.pos < len(self.lines) and not self.lines[self.pos][1]:
            self.pos += 1

    def peek(self) -> Optional[str]:
        self._skip_blank()
        return self.lines[self.pos][1] if self.pos < len(self.lines) else None

    def peek_indent(self) -> int:
        self._skip_blank()
        return self.lines[self.pos][0] if self.pos < len(self.lines) else -1

    def block(self, indent: int) -> Any:
        """The mapping or sequence whose lines start at exactly ``indent``."""
        content = self.peek()
        assert content is not None
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FrontmatterError(f"the frontmatter nests more than {MAX_DEPTH} levels deep "
                                   "(the most this reader accepts)")
        try:
            if content == "-" or content.startswith("- "):
                return self._sequence(indent)
            return self._mapping(indent)
        finally:
            self.depth -= 1

    def _mapping(self, indent: int) -> Dict[str, Any]:
        found: Dict[str, Any] = {}
        while self.peek() is not None and self.peek_indent() == indent:
            content = self.lines[self.pos][1]
            match = _split_key(content)
            if match is None:
                raise FrontmatterError(f"expected 'key: value' in frontmatter, got {_clip(content)!r}")
            key = _key(match[0])
            if key in found:
                raise FrontmatterError(f"the key {_clip(key)!r} appears twice in the frontmatter")
            self.pos += 1
            found[key] = self._value(match[1].strip(), indent)
        if self.peek() is not None and self.peek_indent() > indent:
            raise FrontmatterError(f"unexpected indentation in frontmatter at {_clip(str(self.peek()))!r}")
        return found

    def _sequence(self, indent: int) -> List[Any]:
        items: List[Any] = []
        while self.peek() is not None and self.peek_indent() == indent:
            content = self.lines[self.pos][1]
            if not (content == "-" or content.startswith("- ")):
                break
            rest = content[1:].strip()
            if rest and _split_key(rest) and not rest.startswith(("'", '"', "[", "{")):
                # "- key: value" opens a mapping whose other keys sit under the first one
                self.lines[self.pos] = (indent + 2, rest)
                items.append(self._mapping(indent + 2))
            else:
                self.pos += 1
                items.append(self._value(rest, indent))
        return items

    def _value(self, rest: str, indent: int) -> Any:
        """The value after ``key:`` or ``-``: inline, a block scalar, or a nested block below it."""
        if rest[:1] in ("&", "*", "!", "?") or rest.startswith("<<"):
            raise FrontmatterError(f"YAML anchors, aliases, tags and complex keys are not supported: {_clip(rest)!r}")
        if rest[:1] in ("|", ">"):
            return self._block_scalar(rest, indent)
        if rest:
            return self._inline(rest, indent)
        nested = self.peek_indent()
        if self.peek() is not None and (nested > indent or (nested == indent and self.peek() is not None
                                                             and str(self.peek()).startswith("- "))):
            return self.block(nested)
        return None

    def _inline(self, rest: str, indent: int) -> Any:
        if rest[0] in "[{":
            value, end = _flow(rest, 0, self.depth)
            if rest[end:].strip():
                raise FrontmatterError(f"unexpected text after a flow collection: {_clip(rest)!r}")
            return value
        if rest[0] in "'\"":
            return _quoted(rest)
        parts = [rest]  # a plain scalar may go on over more-indented lines, folded with spaces
        while self.peek() is not None and self.peek_indent() > indent and not _split_key(str(self.peek())):
            parts.append(str(self.peek()))
            self.pos += 1
        return _scalar(" ".join(parts)) if len(parts) == 1 else " ".join(parts)

    def _block_scalar(self, header: str, indent: int) -> str:
        style, chomp = header[0], header[1:].strip()
        if chomp not in ("", "-", "+"):
            raise FrontmatterError(f"unsupported block scalar header {_clip(header)!r}")
        lines = self._block_lines(indent)
        while lines and not lines[-1] and chomp != "+":
            lines.pop()
        text = "\n".join(lines) if style == "|" else _fold(lines)
        return text if chomp == "-" or not lines else text + "\n"

    def _block_lines(self, indent: int) -> List[str]:
        """The lines of a block scalar below a header at ``indent``, less the body's own indentation."""
        collected: List[Tuple[int, str]] = []
        while self.pos < len(self.lines):
            line_indent, content = self.lines[self.pos]
            if content and line_indent <= indent:
                break
            collected.append((line_indent, content))
            self.pos += 1
        body_indent = min((i for i, c in collected if c), default=indent + 1)
        return [" " * (i - body_indent) + c if c else "" for i, c in collected]


def _fold(lines: List[str]) -> str:
    """A ``>`` block scalar's lines folded: a blank line is a newline, more-indented lines keep theirs."""
    text = ""
    for index, line in enumerate(lines):
        previous = lines[index - 1] if index else ""
        if index == 0:
            text = line
        elif not line:
            text += "\n"
        elif not previous:
            text += line
        elif line.startswith(" ") or previous.startswith(" "):
            text += "\n" + line
        else:
            text += " " + line
    return text


def _key(text: str) -> str:
    return str(_quoted(text)) if text[:1] in "'\"" else text


def _quoted(text: str) -> str:
    if text[0] == "'":
        if len(text) < 2 or not text.endswith("'"):
            raise FrontmatterError(f"unterminated quoted string {_clip(text)!r}")
        return text[1:-1].replace("''", "'")
    try:
        value = json.loads(text)  # YAML's double-quoted escapes are, for frontmatter, JSON's
    except ValueError as exc:
        raise FrontmatterError(f"unsupported double-quoted string {_clip(text)!r}") from exc
    if not isinstance(value, str):
        raise FrontmatterError(f"unsupported double-quoted string {_clip(text)!r}")
    return value


def _scalar(text: str) -> Any:
    """A plain scalar resolved by YAML 1.2's core schema."""
    if text in _CONSTANTS:
        return _CONSTANTS[text]
    if _INT.match(text):
        return _integer(text)
    if _OCTAL.match(text):
        return int(text[2:], 8)
    if _HEX.match(text):
        return int(text[2:], 16)
    if _FLOAT.match(text):
        return float(text)
    return _SPECIAL_FLOATS.get(text.lower(), text)


def _integer(text: str) -> int:
    """A decimal integer, refused past :data:`MAX_INT_DIGITS` digits."""
    digits = len(text.lstrip("+-"))
    if digits > MAX_INT_DIGITS:
        raise FrontmatterError(f"an integer of {digits} digits (more than {MAX_INT_DIGITS}) cannot be read")
    return int(text)


def _flow(text: str, pos: int, depth: int) -> Tuple[Any, int]:
    """A one-line flow collection or scalar starting at ``pos``, ``depth`` collections deep already;
    returns it and the position after it."""
    pos = _skip_spaces(text, pos)
    if pos >= len(text):
        raise FrontmatterError(f"unterminated flow collection {_clip(text)!r}")
    opener = text[pos]
    if opener in "[{":
        return _flow_collection(text, pos, depth + 1)
    if opener in "'\"":
        end = _quote_end(text, pos)
        return _quoted(text[pos:end + 1]), end + 1
    end = pos
    while end < len(text) and text[end] not in ",]}" and not (text[end] == ":" and text[end + 1:end + 2] in (" ", "")):
        end += 1
    return _scalar(text[pos:end].strip()), end


def _flow_collection(text: str, pos: int, depth: int) -> Tuple[Any, int]:
    """The ``[...]`` or ``{...}`` opening at ``pos``, which is ``depth`` collections deep."""
    if depth > MAX_DEPTH:
        raise FrontmatterError(f"the frontmatter nests more than {MAX_DEPTH} levels deep "
                               "(the most this reader accepts)")
    opener = text[pos]
    closer = "]" if opener == "[" else "}"
    items: List[Any] = []
    mapping: Dict[str, Any] = {}
    pos += 1
    while True:
        pos = _skip_spaces(text, pos)
        if text[pos:pos + 1] == closer:
            return (items if opener == "[" else mapping), pos + 1
        if opener == "{":
            pos = _flow_pair(text, pos, depth, mapping)
        else:
            item, pos = _flow(text, pos, depth)
            items.append(item)
        pos = _skip_spaces(text, pos)
        if text[pos:pos + 1] == ",":
            pos += 1
        elif text[pos:pos + 1] != closer:
            raise FrontmatterError(f"malformed flow collection {_clip(text)!r}")


def _flow_pair(text: str, pos: int, depth: int, mapping: Dict[str, Any]) -> int:
    """Reads one ``key: value`` of a flow mapping at ``pos`` into ``mapping``; the position after it."""
    key, pos = _flow(text, pos, depth)
    pos = _skip_spaces(text, pos)
    if text[pos:pos + 1] != ":":
        raise FrontmatterError(f"expected ':' in flow mapping {_clip(text)!r}")
    value, pos = _flow(text, pos + 1, depth)
    mapping[str(key)] = value
    return pos


def _skip_spaces(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] == " ":
        pos += 1
    return pos
