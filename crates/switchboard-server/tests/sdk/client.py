"""The official openai Python SDK as a client of the gateway.

Run by tests/it/sdk.rs as `python3 client.py BASE_URL CASE`; prints one JSON object on stdout
for the Rust test to assert on. What the SDK makes of the gateway's answers is the point, so
this script only asks and reports: every judgement is made in the Rust test.

Cases:
  native      the "native" route: a whole answer, then the same answer streamed through the
              SDK's stream helper with stream_options.include_usage
  prompted    the "hermes" route (prompted tool calling): a whole answer, then streamed
              without include_usage
  bad-request requests the gateway must refuse with 400, as the SDK surfaces them
  request     the request read as JSON from standard input (model, messages, tools and any
              other fields), whole and then streamed with include_usage: the real-backend
              suite's case

Exit status 3 means the SDK is not installed (the Rust test then says to run scripts/test).
"""

import json
import sys

try:
    import openai
    from openai import OpenAI
except ImportError as error:  # the Rust side turns this into a failed test with advice
    print(f"cannot import the openai SDK: {error}", file=sys.stderr)
    sys.exit(3)

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city", "parameters": CITY}},
    {"type": "function", "function": {"name": "get_time", "description": "Local time in a city", "parameters": CITY}},
]
MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather and time in Paris?"},
]


def summary(completion):
    """The parts of a completion the gateway is responsible for, as plain JSON."""
    choice = completion.choices[0]
    message = choice.message
    return {
        "object": completion.object,
        "id": completion.id,
        "model": completion.model,
        "finish_reason": choice.finish_reason,
        "role": message.role,
        "content": message.content,
        "tool_calls": [
            {"id": call.id, "type": call.type, "name": call.function.name, "arguments": call.function.arguments}
            for call in message.tool_calls or []
        ],
        "usage": None
        if completion.usage is None
        else {
            "prompt_tokens": completion.usage.prompt_tokens,
            "completion_tokens": completion.usage.completion_tokens,
            "total_tokens": completion.usage.total_tokens,
        },
    }


def streamed(client, request, include_usage):
    """Streams through the SDK's own helper and accumulator; also reports the raw tool-call
    deltas so the test can check their shape (first delta per call, later ones)."""
    options = {"stream_options": {"include_usage": True}} if include_usage else {}
    deltas = []
    chunks = 0
    last_chunk = None
    with client.chat.completions.stream(**request, **options) as stream:
        for event in stream:
            if event.type != "chunk":
                continue
            chunks += 1
            last_chunk = event.chunk
            for choice in event.chunk.choices:
                for call in choice.delta.tool_calls or []:
                    function = call.function
                    deltas.append(
                        {
                            "index": call.index,
                            "id": call.id,
                            "type": call.type,
                            "name": None if function is None else function.name,
                            "arguments": None if function is None else function.arguments,
                        }
                    )
        final = stream.get_final_completion()
    return {
        "final": summary(final),
        "deltas": deltas,
        "chunks": chunks,
        "last_chunk": {
            "choices": len(last_chunk.choices),
            "usage": None if last_chunk.usage is None else last_chunk.usage.total_tokens,
        },
    }


def tool_calls(client, request, include_usage):
    whole = client.chat.completions.create(**request)
    return {"whole": summary(whole), "streamed": streamed(client, request, include_usage)}


def refusal(label, ask):
    try:
        ask()
    except openai.APIStatusError as error:
        return {
            "label": label,
            "class": type(error).__name__,
            "status": error.status_code,
            "message": error.message,
            "type": error.type,
            "param": error.param,
            "code": error.code,
            "body": error.body,
        }
    return {"label": label, "class": None}


def bad_requests(client):
    def create(**fields):
        return lambda: client.chat.completions.create(model="native", messages=MESSAGES, **fields)

    def stream(**fields):
        def ask():
            with client.chat.completions.stream(model="native", messages=MESSAGES, **fields) as events:
                for _ in events:
                    pass

        return ask

    return {
        "errors": [
            refusal("temperature", create(tools=TOOLS, temperature=5)),
            refusal("tool_choice", create(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "get_news"}})),
            refusal(
                "tools",
                create(tools=[{"type": "function", "function": {"name": "bad name!", "parameters": {"type": "object"}}}]),
            ),
            refusal("streamed", stream(tools=TOOLS, top_p=3)),
        ]
    }


def main():
    base_url, case = sys.argv[1], sys.argv[2]
    # A real model on two shared cores can take a while; scripted backends answer at once.
    client = OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0, timeout=300)
    if case == "native":
        result = tool_calls(client, {"model": "native", "messages": MESSAGES, "tools": TOOLS}, include_usage=True)
    elif case == "prompted":
        result = tool_calls(client, {"model": "hermes", "messages": MESSAGES, "tools": TOOLS}, include_usage=False)
    elif case == "request":
        result = tool_calls(client, json.load(sys.stdin), include_usage=True)
    elif case == "bad-request":
        result = bad_requests(client)
    else:
        print(f"unknown case {case!r}", file=sys.stderr)
        sys.exit(2)
    result["sdk_version"] = openai.__version__
    print(json.dumps(result))


if __name__ == "__main__":
    main()
