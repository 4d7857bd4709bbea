"""A ready-made ``on_progress`` callback that draws a progress bar.

::

    with mcpsync.ProgressBar("indexing") as bar:
        client.call_tool("index", on_progress=bar)

Uses tqdm (``tqdm.auto``, so notebooks get a widget) when it is installed
(``pip install mcpsync[progress]``), else a plain text line on stderr.
"""

from __future__ import annotations

import sys
import threading
from typing import IO, Any, Optional

from ._terminal import shown

__all__ = ["ProgressBar"]


class ProgressBar:
    """Callable as ``on_progress(progress, total, message)``; draws and updates one bar.

    Args:
        description: a label shown before the bar.
        file: where the text bar goes (default ``sys.stderr``; the tqdm bar
            follows tqdm's own rules).
        use_tqdm: ``None`` to use tqdm when it is importable, ``False`` never.

    Thread safety: calls may come from mcpsync's dispatcher thread while the
    caller's thread waits; updates are serialised.
    """

    def __init__(self, description: str = "", *, file: Optional[IO[str]] = None,
                 use_tqdm: Optional[bool] = None, width: int = 30) -> None:
        self.description = description
        self.file = file
        self.width = width
        self.progress = 0.0
        self.total: Optional[float] = None
        self.message: Optional[str] = None
        self._lock = threading.Lock()
        self._bar: Any = None
        self._closed = False
        if use_tqdm is not False:
            try:
                from tqdm.auto import tqdm  # type: ignore[import-untyped,unused-ignore]
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(desc=description or None, total=None, file=file, leave=True)

    def __call__(self, progress: float, total: Optional[float], message: Optional[str]) -> None:
        with self._lock:
            if self._closed:
                return
            self.progress, self.total, self.message = progress, total, message
            if self._bar is not None:
                if total is not None and self._bar.total != total:
                    self._bar.total = total
                self._bar.n = progress
                if message:  # the server's text: escaped, on one line (the output gate)
                    self._bar.set_postfix_str(shown(message), refresh=False)
                self._bar.refresh()
            else:
                self._draw()

    def render(self) -> str:
        """The text bar for the current state (what the plain-text mode prints).

        The server's message passes the output gate (:func:`mcpsync._terminal.shown`): its
        controls, bidi overrides and newlines are shown escaped, so it cannot move the cursor
        or break out of the bar's one line; the bar's own ``\\r`` and erase-line are kept.
        """
        label = f"{self.description} " if self.description else ""
        if self.total:
            fraction = max(0.0, min(1.0, self.progress / self.total))
            filled = int(round(fraction * self.width))
            bar = "#" * filled + "-" * (self.width - filled)
            text = f"{label}[{bar}] {self.progress:g}/{self.total:g}"
        else:
            text = f"{label}{self.progress:g}"
        return f"{text} {shown(self.message)}" if self.message else text

    def _draw(self) -> None:
        stream = self.file if self.file is not None else sys.stderr
        if stream is None:  # pythonw and some services have no stderr at all
            return
        try:
            stream.write("\r" + self.render() + "\033[K")
            stream.flush()
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        """Finish the bar (ends the text line). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._bar is not None:
                self._bar.close()
            elif self.progress or self.message:
                stream = self.file if self.file is not None else sys.stderr
                if stream is not None:
                    try:
                        stream.write("\n")
                        stream.flush()
                    except (OSError, ValueError):
                        pass

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()
