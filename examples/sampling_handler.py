"""Answer a server's sampling requests with your own model.

    python examples/sampling_handler.py

A server may ask the client's LLM for a message (``sampling/createMessage``).
Give the client a ``sampling_handler``: it receives a ``CreateMessageParams``
(the conversation, the system prompt, ``max_tokens``, the server's model hints)
and returns a ``CreateMessageResult``. Raise ``SamplingRejected`` to refuse.
The same handler serves legacy servers (which send a request mid-call) and
2026-07-28 servers (which answer ``input_required``; mcpsync retries for you).

Here the "model" is a stand-in; call your provider's API instead.
"""

import sys
from pathlib import Path

import mcpsync

SERVER = Path(__file__).with_name("asking_server.py")


def my_model(system: str, prompt: str, max_tokens: int) -> str:
    """Stand-in for a real LLM call (OpenAI, Anthropic, a local model...)."""
    return "Threads wait in silence / one call blocks, the others run / the answer arrives"


def sampling(params: mcpsync.CreateMessageParams) -> mcpsync.CreateMessageResult:
    print(f"[server asks the model] hints={params.model_hints} max_tokens={params.max_tokens}")
    print(f"  system: {params.system_prompt}")
    print(f"  prompt: {params.text}")
    if "password" in params.text.lower():
        raise mcpsync.SamplingRejected("This client does not send secrets to a model")
    reply = my_model(params.system_prompt or "", params.text, params.max_tokens or 256)
    return mcpsync.CreateMessageResult(reply, model="stand-in-model")


def main() -> None:
    with mcpsync.connect([sys.executable, str(SERVER)], sampling_handler=sampling) as client:
        print(f"Connected to {client.server_info.name} (protocol {client.protocol_version})")
        result = client.call_tool("haiku", {"topic": "threads"})
        print("haiku:", result.text)


if __name__ == "__main__":
    main()
