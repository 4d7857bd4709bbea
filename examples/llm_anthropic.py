"""Hand the demo server's tools to Anthropic's Messages API, and answer one tool_use block.

    python examples/llm_anthropic.py

No model is called: the ``tool_use`` block below is written by hand, as Claude would
send it, so the script runs offline and without the anthropic package. With a real
model, pass the SDK's ``ToolUseBlock`` objects from ``message.content`` to ``run``.
"""

import sys
from pathlib import Path

import mcpsync
from mcpsync.llm import Toolbox

DEMO_SERVER = Path(__file__).with_name("demo_server.py")


def main() -> None:
    with mcpsync.connect([sys.executable, str(DEMO_SERVER)]) as client:
        toolbox = Toolbox(client, api="anthropic")
        tools = toolbox.tools()
        print("tools:", ", ".join(tool["name"] for tool in tools))
        messages = [{"role": "user", "content": "What is 2 + 40?"}]
        # The real call would go here:
        #   message = anthropic.Anthropic().messages.create(
        #       model="claude-sonnet-4-5", max_tokens=1024, messages=messages, tools=tools)
        #   messages.append({"role": "assistant", "content": message.content})
        #   uses = [block for block in message.content if block.type == "tool_use"]
        uses = [{"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 40}}]
        # Every tool_result block of one turn goes in one user message.
        reply = {"role": "user", "content": [toolbox.run(block) for block in uses]}
        messages.append(reply)
        print("tool_result:", reply["content"][0])


if __name__ == "__main__":
    main()
