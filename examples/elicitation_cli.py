"""Let a server ask the person at the terminal (elicitation), with ``input()``.

    python examples/elicitation_cli.py

The ``elicitation_handler`` gets an ``ElicitParams``: who asks (``server``),
the ``message``, and for a form the ``requested_schema`` (a flat object of
strings, numbers, booleans and enums, maybe with defaults). It returns
``ElicitResult.accept({...})``, ``.decline()`` or ``.cancel()``. Fields left
empty get the schema's default. URL mode (``elicitation_modes=("form", "url")``)
hands you a URL to show; mcpsync never opens or fetches it itself.
"""

import sys
from pathlib import Path
from typing import Any, Dict

import mcpsync

SERVER = Path(__file__).with_name("asking_server.py")


def convert(text: str, schema: Dict[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "integer":
        return int(text)
    if kind == "number":
        return float(text)
    if kind == "boolean":
        return text.strip().lower() in ("y", "yes", "true", "1")
    return text


def ask_in_terminal(params: mcpsync.ElicitParams) -> mcpsync.ElicitResult:
    who = params.server.name if params.server else "the server"
    print(f"\n{who} asks: {params.message}")
    if params.mode == "url":
        print(f"  It wants you to open: {params.url}")
        answer = input("  Open it in your browser yourself? [y/N/c=cancel] ").strip().lower()
        return mcpsync.ElicitResult.accept() if answer == "y" else (
            mcpsync.ElicitResult.cancel() if answer == "c" else mcpsync.ElicitResult.decline())
    schema = params.requested_schema
    required = set(schema.get("required", []))
    form: Dict[str, Any] = {}
    try:
        for name, prop in schema.get("properties", {}).items():
            label = prop.get("title", name)
            default = f" [{prop['default']}]" if "default" in prop else ""
            text = input(f"  {label}{default}{' (required)' if name in required else ''}: ").strip()
            if text:
                form[name] = convert(text, prop)  # left empty: the default is sent for it
    except (EOFError, KeyboardInterrupt):
        print()
        return mcpsync.ElicitResult.cancel()
    if required - set(form):
        return mcpsync.ElicitResult.decline()
    if input("  Send this? [Y/n] ").strip().lower() == "n":
        return mcpsync.ElicitResult.decline()
    return mcpsync.ElicitResult.accept(form)


def main() -> None:
    with mcpsync.connect([sys.executable, str(SERVER)], elicitation_handler=ask_in_terminal,
                         timeout=600) as client:  # a person may take their time
        print(client.call_tool("book_table", {"restaurant": "Chez Thread"}).text)


if __name__ == "__main__":
    main()
