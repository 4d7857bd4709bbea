"""Output limits: a tool result over its byte cap (``max_output``) is cut to a head, and the whole
result is written to a file whose path the result carries, as coding agents spill large outputs.

The size of a result is the sum of its blocks' payloads: the UTF-8 bytes of each text (a text
block's, an embedded text resource's), the decoded bytes of each base64 payload (images, audio,
embedded blobs), the JSON of any other block, and the JSON of ``structuredContent``. A result over
the cap keeps, in order, the blocks that fit whole and the head of the first text that does not;
the blocks left out are replaced by one line (where the first of them stood) naming their types
and size, a ``structuredContent`` that does not fit is left out, and a last text block says how large the
result was and where the rest is. The result is then a :class:`SpilledResult`, whose
``spill_path`` is the file: the text blocks joined by newlines (``.txt``) when the result is only
text, else the whole result's JSON (``.json``).

The files are created 0600 (``O_EXCL``) in a private directory (0700, checked: see
:func:`output_dir`): one per process made by :func:`tempfile.mkdtemp` (``mcpsync-output-*``), or
``$MCPSYNC_OUTPUT_DIR`` when that is set. They are kept when the process ends, for the person or
agent to read; delete them when done.

Threads: any number of calls may spill at once (each gets its own file).
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Dict, List, Optional, Tuple, TypeVar

from .._rpc.jsonrpc import JSONObject
from .._rpc.options import DEFAULT_OPTIONS, CallOptions
from .._private import private_directory, private_subdirectory
from ..exceptions import SpillError, UnsafeDirectory
from ..types import CallToolResult

__all__ = ["SpillError", "SpilledResult", "capped", "cut", "limit", "output_dir", "result_size", "spill"]

R = TypeVar("R")

_lock = threading.Lock()
_dir: Optional[Tuple[int, Optional[str], str]] = None  # (the pid that chose it, $MCPSYNC_OUTPUT_DIR, the path)


class SpilledResult(CallToolResult):
    """A tool result cut to its ``max_output`` cap; the whole of it is in the file ``spill_path``.

    Attributes:
        spill_path: the file holding the whole result (``.txt``: its text; ``.json``: the wire result).
        full_size: the whole result's size in bytes (as :func:`result_size` counts it).
        max_output: the cap it was cut to.
    """

    __slots__ = ("spill_path", "full_size", "max_output")

    def __init__(self, data: Optional[Dict[str, Any]] = None, *, spill_path: str = "", full_size: int = 0,
                 max_output: int = 0) -> None:
        super().__init__(data)
        self.spill_path = spill_path
        self.full_size = full_size
        self.max_output = max_output

    def __reduce__(self) -> Any:
        return (_rebuild, (self.to_dict(), self.spill_path, self.full_size, self.max_output))

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, spill_path={self.spill_path!r}, full_size={self.full_size})"


def _rebuild(data: Dict[str, Any], path: str, size: int, cap: int) -> SpilledResult:
    return SpilledResult(data, spill_path=path, full_size=size, max_output=cap)


def capped(options: CallOptions, max_output: Optional[int]) -> CallOptions:
    """``options`` with ``max_output`` set (the same value when None).

    Raises:
        ValueError: ``max_output`` is not a positive whole number of bytes.
    """
    if max_output is None:
        return options
    if isinstance(max_output, bool) or not isinstance(max_output, int) or max_output <= 0:
        raise ValueError(f"max_output must be a positive number of bytes, not {max_output!r}")
    return (options if options is not DEFAULT_OPTIONS else CallOptions())._replace(max_output=max_output)


def limit(result: R, options: CallOptions) -> R:
    """``result`` cut to ``options.max_output`` when it is a tool result over that cap (else itself)."""
    if options.max_output is None or not isinstance(result, CallToolResult) or isinstance(result, SpilledResult):
        return result
    limited: Any = cut(result.to_dict(), options.max_output)
    return result if limited is None else limited


def cut(data: Any, cap: int) -> Optional[SpilledResult]:
    """The wire result ``data`` of ``tools/call`` cut to ``cap`` bytes and spilled, or None when it fits.

    The tools room builds every result; this only applies the limit to one over its cap.
    """
    if not isinstance(data, dict):
        return None
    size = result_size(data)
    return None if size <= cap else spill(data, cap, size)


# -- measuring --------------------------------------------------------------------------------


def _text_bytes(text: Any) -> int:
    if not isinstance(text, str):
        return 0
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _base64_bytes(data: Any) -> int:
    """The decoded size of base64 ``data`` (without decoding it)."""
    if not isinstance(data, str):
        return 0
    padding = 2 if data.endswith("==") else 1 if data.endswith("=") else 0
    return len(data) * 3 // 4 - padding


def _block_size(block: Any) -> int:
    if not isinstance(block, dict):
        return len(json.dumps(block, default=str))
    kind = block.get("type")
    if kind == "text":
        return _text_bytes(block.get("text"))
    if kind in ("image", "audio"):
        return _base64_bytes(block.get("data"))
    if kind == "resource" and isinstance(block.get("resource"), dict):
        resource = block["resource"]
        return _text_bytes(resource.get("text")) + _base64_bytes(resource.get("blob"))
    return len(json.dumps(block, default=str))


def result_size(data: JSONObject) -> int:
    """A tool result's size in bytes: its blocks' payloads plus the JSON of ``structuredContent``."""
    blocks = data.get("content")
    size = sum(_block_size(block) for block in blocks) if isinstance(blocks, list) else 0
    if data.get("structuredContent") is not None:
        size += len(json.dumps(data["structuredContent"], default=str))
    return size


# -- cutting and spilling ---------------------------------------------------------------------


def output_dir() -> str:
    """The private directory spill files go to (see ``mcpsync/_private.py`` for "private").

    ``$MCPSYNC_OUTPUT_DIR`` when set: made 0700 if missing, used as it is when it is a
    private directory of the user's; when others may read it, or it is a shared
    sticky directory such as ``/tmp``, a private ``mcpsync-output-*`` directory is made
    inside it (one per process). Unset: one ``mcpsync-output-*`` per process in the
    temporary directory, made the same way.

    Raises:
        UnsafeDirectory: ``$MCPSYNC_OUTPUT_DIR`` (or the temporary directory) is a
            symlink, not a directory, owned by another user, or writable by others
            without being sticky: it is refused, never used.
    """
    global _dir
    chosen = os.environ.get("MCPSYNC_OUTPUT_DIR")
    parent = os.path.abspath(chosen) if chosen else None
    with _lock:
        if _dir is not None and _dir[:2] == (os.getpid(), parent) and os.path.isdir(_dir[2]):
            return _dir[2]
        if parent is None:
            import tempfile

            made = private_subdirectory(tempfile.gettempdir(), prefix="mcpsync-output-", what="the spill directory")
        else:
            try:
                made = private_directory(parent, what="the spill directory ($MCPSYNC_OUTPUT_DIR)")
            except UnsafeDirectory:
                # Others may read it (a shared folder; /tmp, root's and sticky): a private directory of
                # ours inside it, if it is safe to hold one (a symlink, another user's, or writable by
                # others without the sticky bit is refused there).
                made = private_subdirectory(parent, prefix="mcpsync-output-",
                                            what="the spill directory ($MCPSYNC_OUTPUT_DIR)")
        _dir = (os.getpid(), parent, made)
        return made


def _write(data: JSONObject, blocks: List[Any]) -> str:
    import tempfile

    only_text = all(isinstance(b, dict) and b.get("type") == "text" for b in blocks) and \
        data.get("structuredContent") is None
    handle, path = tempfile.mkstemp(prefix="result-", suffix=".txt" if only_text else ".json", dir=output_dir())
    with open(handle, "w", encoding="utf-8", errors="surrogatepass") as stream:  # mkstemp made it 0600
        if only_text:
            for i, block in enumerate(blocks):
                stream.write(("\n" if i else "") + str(block.get("text") or ""))
        else:
            json.dump(data, stream, ensure_ascii=False, default=str)
    return path


def _head(text: str, budget: int) -> str:
    """The longest start of ``text`` whose UTF-8 form has at most ``budget`` bytes."""
    head = text[:budget]
    if head.isascii():
        return head
    return head.encode("utf-8", "surrogatepass")[:budget].decode("utf-8", "ignore")


def _cut(block: Any, budget: int) -> Tuple[Optional[Dict[str, Any]], int]:
    """What is kept of one block with ``budget`` bytes left (None: nothing), and the bytes it takes."""
    size = _block_size(block)
    if size <= budget:
        return block, size
    text = _cuttable_text(block) if budget > 0 else None
    if text is None:
        return None, 0
    head = _head(text, budget)
    if block["type"] == "text":
        return {**block, "text": head}, _text_bytes(head)
    return {**block, "resource": {**block["resource"], "text": head}}, _text_bytes(head)


def _cuttable_text(block: Any) -> Optional[str]:
    """The text whose start a cut block keeps: a text block's, or an embedded text resource's; None for others."""
    if not isinstance(block, dict):
        return None
    if block.get("type") == "text":
        return str(block.get("text") or "")
    resource = block.get("resource")
    if block.get("type") == "resource" and isinstance(resource, dict) and isinstance(resource.get("text"), str):
        return str(resource["text"])
    return None


def _what(block: Any) -> str:
    """A block as a left-out line names it: ``image/png image``, ``text``..."""
    if not isinstance(block, dict):
        return "content"
    kind = str(block.get("type", "content"))
    mime = block["resource"].get("mimeType") if kind == "resource" and isinstance(block.get("resource"), dict) \
        else block.get("mimeType")
    return f"{mime} {kind}" if mime else kind


def _left_out(blocks: List[Any]) -> Dict[str, Any]:
    """One line for the blocks that were left out (however many there are)."""
    size = sum(_block_size(block) for block in blocks)
    if len(blocks) == 1:
        text = f"[{_what(blocks[0])} block of {size:,} bytes left out: see the spill file]"
    else:
        kinds = sorted({_what(block) for block in blocks})
        shown = ", ".join(kinds[:5]) + (", ..." if len(kinds) > 5 else "")
        text = f"[{len(blocks):,} blocks left out ({shown}; {size:,} bytes): see the spill file]"
    return {"type": "text", "text": text}


def spill(data: JSONObject, cap: int, size: Optional[int] = None) -> SpilledResult:
    """Write the whole result ``data`` to a spill file; return it cut to ``cap`` bytes with a note.

    Raises:
        SpillError: the spill file could not be written (the directory is not writable, say);
            its ``.result`` is the whole result.
    """
    size = result_size(data) if size is None else size
    blocks = data.get("content") if isinstance(data.get("content"), list) else []
    assert isinstance(blocks, list)
    path = _write_whole(data, blocks, size, cap)
    kept, budget = _fit(blocks, cap)
    head: Dict[str, Any] = {key: value for key, value in data.items() if key not in ("content", "structuredContent")}
    structured = data.get("structuredContent")
    if structured is not None and len(json.dumps(structured, default=str)) <= budget:
        head["structuredContent"] = structured
    kept.append({"type": "text", "text": f"[mcpsync: output truncated: the result is {size:,} bytes, over "
                                         f"max_output={cap:,}; the whole of it is in {path}]"})
    head["content"] = kept
    return SpilledResult(head, spill_path=path, full_size=size, max_output=cap)


def _write_whole(data: JSONObject, blocks: List[Any], size: int, cap: int) -> str:
    """:func:`_write`, its failures raised as a :class:`SpillError` holding the whole result."""
    try:
        return _write(data, blocks)
    except UnsafeDirectory as exc:
        raise SpillError(f"The tool result is {size:,} bytes, over max_output={cap:,}, and was not written: {exc}. "
                         "The whole result is this error's .result", CallToolResult(data)) from exc
    except OSError as exc:
        where = os.environ.get("MCPSYNC_OUTPUT_DIR") or "the temporary directory"
        raise SpillError(f"The tool result is {size:,} bytes, over max_output={cap:,}, and the file for the whole "
                         f"of it could not be written in {where} ({exc}); set MCPSYNC_OUTPUT_DIR to a writable "
                         "directory, or raise max_output. The whole result is this error's .result",
                         CallToolResult(data)) from exc


def _fit(blocks: List[Any], cap: int) -> Tuple[List[Any], int]:
    """The blocks kept (whole or cut) within ``cap`` bytes, one line in place of those left out; the bytes left."""
    kept: List[Any] = []
    dropped: List[Any] = []
    at = -1  # where the line for the blocks left out goes: in place of the first of them
    budget = cap
    for block in blocks:
        part, used = _cut(block, budget)
        if part is None:
            at = len(kept) if at < 0 else at
            dropped.append(block)
            continue
        kept.append(part)
        budget -= used
    if dropped:
        kept.insert(at, _left_out(dropped))
    return kept, budget
