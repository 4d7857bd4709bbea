"""Hand the demo server's tools to OpenAI, and answer one tool call (no model is called).

    python examples/llm_openai.py

The tool list is what you pass as ``tools=`` to Chat Completions and to Responses. The
tool call below is written by hand, shaped as the model would send it, so the script runs
offline and without the openai package; with a real model, use the objects the SDK gives
you (``message.tool_calls`` or the ``function_call`` items of ``response.output``).
"""

import json
import sys
from pathlib import Path

import mcpsync
from mcpsync.llm import Toolbox

DEMO_SERVER = Path(__file__).with_name("demo_server.py")


def main() -> None:
    with mcpsync.connect([sys.executable, str(DEMO_SERVER)]) as client:
        # -- Chat Completions ------------------------------------------------------------
        chat = Toolbox(client, api="openai-chat")
        tools = chat.tools()
        print("chat tools:", ", ".join(tool["function"]["name"] for tool in tools))
        messages = [{"role": "user", "content": "What is 2 + 40?"}]
        # The real call would go here:
        #   completion = openai.OpenAI().chat.completions.create(
        #       model="gpt-4.1", messages=messages, tools=tools)
        #   message = completion.choices[0].message
        #   messages.append(message)
        #   for tool_call in message.tool_calls or []:
        #       messages.append(chat.run(tool_call))
        tool_call = {"id": "call_1", "type": "function",
                     "function": {"name": "add", "arguments": json.dumps({"a": 2, "b": 40})}}
        answer = chat.run(tool_call)
        messages.append(answer)
        print("chat tool message:", answer)

        # -- Responses --------------------------------------------------------------------
        responses = Toolbox(client, api="openai-responses")
        tools = responses.tools()
        # The real call would go here:
        #   response = openai.OpenAI().responses.create(model="gpt-4.1", input=items, tools=tools)
        #   items += response.output
        #   items += [responses.run(item) for item in response.output if item.type == "function_call"]
        function_call = {"type": "function_call", "call_id": "call_2", "name": "echo",
                         "arguments": json.dumps({"text": "hello"})}
        print("responses output item:", responses.run(function_call))


if __name__ == "__main__":
    main()
