"""Hand the demo server's tools to Gemini (google-genai), and answer one function call.

    python examples/llm_gemini.py

No model is called: the function call below is written by hand, as Gemini would send
it, so the script runs offline and without the google-genai package. With a real model,
pass the SDK's ``FunctionCall`` objects (``response.function_calls``) or the ``Part``
objects holding them to ``run``.
"""

import sys
from pathlib import Path

import mcpsync
from mcpsync.llm import Toolbox

DEMO_SERVER = Path(__file__).with_name("demo_server.py")


def main() -> None:
    with mcpsync.connect([sys.executable, str(DEMO_SERVER)]) as client:
        toolbox = Toolbox(client, api="gemini")
        tools = toolbox.tools()  # one Tool holding every function declaration
        print("functions:", ", ".join(f["name"] for f in tools[0]["function_declarations"]))
        contents = [{"role": "user", "parts": [{"text": "What is 2 + 40?"}]}]
        # The real call would go here:
        #   response = genai.Client().models.generate_content(
        #       model="gemini-2.5-flash", contents=contents, config={"tools": tools})
        #   contents.append(response.candidates[0].content)
        #   calls = response.function_calls or []
        calls = [{"name": "add", "args": {"a": 2, "b": 40}}]
        # The function_response parts of one turn go back in one user turn.
        reply = {"role": "user", "parts": [toolbox.run(call) for call in calls]}
        contents.append(reply)
        print("function_response:", reply["parts"][0])


if __name__ == "__main__":
    main()
