"""The server the docs' code blocks talk to as ``server.py`` (tests/test_docs.py).

The demo server's tools (``echo``, ``add``, ``countdown``), resource and prompt, plus the tools
the guides call as examples of "your server's" tools (``search``, ``square``, ``index``,
``query``), written with :class:`mcpsync.testing.FakeServer` and served over stdio.

    python tests/servers/docs_server.py
"""

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


@server.resource("demo://readme", mime_type="text/markdown")
def readme() -> str:
    return "# mcpsync demo server\n\nThis text is served as a resource.\n"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Please greet {name}."


if __name__ == "__main__":
    server.run_stdio()
