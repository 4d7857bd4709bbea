"""The server the docs' code blocks talk to as ``server.py`` (tests/test_docs.py).

The demo server's tools (``echo``, ``add``, ``countdown``), resource and prompt, plus the tools
the guides call as examples of "your server's" tools (``search``, ``square``, ``index``,
``query``, ``slow``, ``crawl``, ``read_file``, ``summarise``, ``charge_card``, and ``chart`` with its MCP Apps view), written
with :class:`mcpsync.testing.FakeServer` and served over stdio.

    python tests/servers/docs_server.py
"""

from pathlib import Path
from typing import Dict, List

from mcpsync.testing import Context, FakeServer

server = FakeServer("docs-server")


@server.tool()
def echo(text: str) -> str:
    """Return the given text unchanged."""
    return text


@server.tool()
def add(a: float, b: float) -> Dict[str, float]:
    """Add two numbers."""
    total = a + b
    return {"sum": int(total) if total == int(total) else total}


@server.tool()
def countdown(ctx: Context, n: int, delay: float = 0) -> str:
    """Count down from n, reporting progress at every step."""
    for step in range(1, n + 1):
        ctx.sleep(delay)
        ctx.progress(step, n, f"{n - step} to go")
    return "Liftoff!"


@server.tool()
def search(q: str) -> List[str]:
    """Search the archive."""
    return [f"a result for {q}"]


@server.tool()
def square(n: int) -> int:
    """The square of n."""
    return n * n


@server.tool()
def index(ctx: Context, files: int = 3) -> str:
    """Index some files, reporting progress after each."""
    for done in range(1, files + 1):
        ctx.progress(done, files, f"indexed {done}")
    return f"indexed {files} files"


@server.tool()
def query(sql: str) -> str:
    """Run a query; its result is large (about 300 kB)."""
    return "\n".join(f"row {number}: {sql}" for number in range(10_000))


@server.tool()  # longer than docs/timeouts.md's 5 s cancel timer
def slow(ctx: Context) -> str:
    """Work for 6 seconds, or until cancelled."""
    return "done" if ctx.sleep(6) else "cancelled"


@server.tool()
def crawl(ctx: Context, site: str, pages: int = 3) -> str:
    """Crawl a site, reporting progress after each page."""
    for done in range(1, pages + 1):
        ctx.progress(done, pages, f"crawled {done} of {site}")
    return f"crawled {pages} pages of {site}"


@server.tool()  # docs/manager.md's "files" server
def read_file(path: str) -> str:
    """Read a text file below the server's working directory."""
    root = Path.cwd().resolve()
    target = (root / path).resolve()
    if root not in target.parents:
        raise ValueError(f"{path} is outside {root}")
    return target.read_text(encoding="utf-8")


@server.tool()  # docs/deploying.md's workers call it
def summarise(path: str) -> str:
    """Summarise a document."""
    return f"a summary of {path}"


@server.tool()  # docs/scale.md: a call that outlives its timeout, not declared safe to repeat
def charge_card(ctx: Context, order: int) -> str:
    """Charge the card of an order (slow: 10 seconds, or until cancelled)."""
    return f"charged order {order}" if ctx.sleep(10) else "cancelled"


@server.tool(meta={"ui": {"resourceUri": "ui://docs-server/chart.html"}})
def chart(values: List[float]) -> Dict[str, List[float]]:
    """Chart some numbers (an MCP Apps tool: its view is ui://docs-server/chart.html)."""
    return {"values": values}


@server.resource("ui://docs-server/chart.html", mime_type="text/html;profile=mcp-app")
def chart_view() -> str:
    return "<!doctype html>\n<title>Chart</title>\n<p>The chart tool's values, drawn.</p>\n"


@server.resource("demo://readme", mime_type="text/markdown")
def readme() -> str:
    return "# mcpsync demo server\n\nThis text is served as a resource.\n"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Please greet {name}."


if __name__ == "__main__":
    server.run_stdio()
