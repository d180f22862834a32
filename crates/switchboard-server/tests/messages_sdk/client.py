"""The official anthropic Python SDK as a client of the gateway's Messages API.

Run by tests/it/messages_sdk.rs as `python3 client.py BASE_URL CASE`; prints one JSON object on
stdout for the Rust test to assert on. What the SDK makes of the gateway's answers is the
point, so this script only asks and reports: every judgement is made in the Rust test.

Cases:
  tools       the "native" route with tools: messages.create, then the same request through
              messages.stream and its accumulator (get_final_message)
  round-trip  a tool_use answered with a tool_result in a second request
  thinking    extended thinking on a reasoning backend, whole and streamed
  prompted    the "hermes" route (prompted tool calling), whole and streamed
  count       messages.count_tokens
  models      models.list
  errors      requests the gateway refuses or that fail at the backend, as the SDK raises them

Exit status 3 means the SDK is not installed (the Rust test then says to run scripts/test).
"""

import json
import sys

try:
    import anthropic
    from anthropic import Anthropic
except ImportError as error:  # the Rust side turns this into a failed test with advice
    print(f"cannot import the anthropic SDK: {error}", file=sys.stderr)
    sys.exit(3)

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [
    {"name": "get_weather", "description": "Current weather in a city", "input_schema": CITY},
    {"name": "get_time", "description": "Local time in a city", "input_schema": CITY},
]
SYSTEM = [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]
MESSAGES = [{"role": "user", "content": "Weather and time in Paris?"}]


def dump(message):
    """The message as plain JSON, exactly as the SDK holds it."""
    return message.model_dump(mode="json", exclude_none=False)


def whole_and_streamed(client, **request):
    whole = client.messages.create(**request)
    events = []
    with client.messages.stream(**request) as stream:
        for event in stream:
            events.append(event.type)
        final = stream.get_final_message()
    return {"whole": dump(whole), "streamed": dump(final), "events": events}


def round_trip(client):
    first = client.messages.create(model="native", max_tokens=512, system=SYSTEM, messages=MESSAGES, tools=TOOLS)
    results = [
        {"type": "tool_result", "tool_use_id": block.id, "content": "22°C and sunny"}
        for block in first.content
        if block.type == "tool_use"
    ]
    history = MESSAGES + [
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]},
        {"role": "user", "content": results},
    ]
    second = client.messages.create(model="native", max_tokens=512, system=SYSTEM, messages=history, tools=TOOLS)
    return {"first": dump(first), "second": dump(second)}


def refusal(label, ask):
    try:
        ask()
    except anthropic.APIStatusError as error:
        return {
            "label": label,
            "class": type(error).__name__,
            "status": error.status_code,
            "type": error.type,
            "message": error.api_message,
            "request_id": error.request_id,
        }
    except anthropic.AnthropicError as error:
        return {"label": label, "class": type(error).__name__, "message": str(error)}
    return {"label": label, "class": None}


def errors(client):
    def create(**fields):
        request = {"model": "native", "max_tokens": 64, "messages": MESSAGES} | fields
        return lambda: client.messages.create(**request)

    def streamed(**fields):
        def ask():
            request = {"model": "native", "max_tokens": 64, "messages": MESSAGES} | fields
            with client.messages.stream(**request) as stream:
                stream.until_done()

        return ask

    return {
        "errors": [
            refusal("bad-request", create(tools=TOOLS, tool_choice={"type": "tool", "name": "get_news"})),
            refusal("not-found", create(model="claude-opus-9")),
            refusal("too-large", create(messages=[{"role": "user", "content": "x" * 100_000}])),
            refusal("rate-limited", create()),
            refusal("overloaded", create()),
            refusal("backend-failed", create()),
            refusal("cut-mid-stream", streamed()),
        ]
    }


def main():
    base_url, case = sys.argv[1], sys.argv[2]
    client = Anthropic(base_url=base_url, api_key="sk-ant-unused", max_retries=0, timeout=30)
    if case == "tools":
        result = whole_and_streamed(client, model="native", max_tokens=512, system=SYSTEM, messages=MESSAGES, tools=TOOLS)
    elif case == "round-trip":
        result = round_trip(client)
    elif case == "thinking":
        result = whole_and_streamed(
            client,
            model="native",
            max_tokens=4096,
            messages=MESSAGES,
            thinking={"type": "enabled", "budget_tokens": 2048},
        )
    elif case == "prompted":
        result = whole_and_streamed(client, model="hermes", max_tokens=512, system=SYSTEM, messages=MESSAGES, tools=TOOLS)
    elif case == "count":
        counted = client.messages.count_tokens(model="native", system=SYSTEM, messages=MESSAGES, tools=TOOLS)
        result = {"input_tokens": counted.input_tokens}
    elif case == "models":
        result = {"ids": [model.id for model in client.models.list()]}
    elif case == "errors":
        result = errors(client)
    else:
        print(f"unknown case {case!r}", file=sys.stderr)
        sys.exit(2)
    result["sdk_version"] = anthropic.__version__
    print(json.dumps(result))


if __name__ == "__main__":
    main()
