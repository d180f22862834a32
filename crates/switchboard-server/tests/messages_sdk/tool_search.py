"""The official anthropic Python SDK with Anthropic's tool search tools, through the gateway.

Run by tests/it/tool_search_messages.rs as `python3 tool_search.py BASE_URL CASE`; prints one
JSON object for the Rust test to judge. The scripted model reads what to search for from the
user's message ("Find: PATTERN", or "Always: PATTERN" to search forever).

Cases:
  regex, bm25  40 deferred tools and the search tool: client.beta.messages.create, then the same
               request through .stream and its accumulator; each block's SDK class
  history      the regex case's answer sent back with the client's tool_result: the
               conversation goes on with the found tool offered
  bad          an invalid regex, a 201-character pattern, an empty pattern: each a 200
  forever      a model that searches on every turn
  refused      the requests Anthropic refuses, as the SDK raises them
"""

import json
import sys

try:
    import anthropic
    from anthropic import Anthropic
except ImportError as error:
    print(f"cannot import the anthropic SDK: {error}", file=sys.stderr)
    sys.exit(3)

CITY = {"type": "object", "properties": {"city": {"type": "string", "description": "The city"}}, "required": ["city"]}
DEFERRED = [
    {"name": "get_weather", "description": "Current weather in a city", "input_schema": CITY, "defer_loading": True}
] + [
    {"name": f"inventory_bin_{n}", "description": f"Count the parts in storage bin {n}", "input_schema": CITY, "defer_loading": True}
    for n in range(39)
]
SEARCH = {
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
}
BETAS = ["advanced-tool-use-2025-11-20"]


def dump(message):
    return message.model_dump(mode="json", exclude_none=False)


def classes(message):
    return [type(block).__name__ for block in message.content]


def ask(client, kind, text, **extra):
    return dict(model="native", max_tokens=512, betas=BETAS, tools=[SEARCH[kind]] + DEFERRED,
                messages=[{"role": "user", "content": text}], **extra)


def whole_and_streamed(client, request):
    whole = client.beta.messages.create(**request)
    events = []
    with client.beta.messages.stream(**request) as stream:
        for event in stream:
            events.append(event.type)
        final = stream.get_final_message()
    return {"whole": dump(whole), "streamed": dump(final), "events": events, "classes": classes(whole),
            "streamed_classes": classes(final)}


def refused(client, request):
    try:
        client.beta.messages.create(**request)
        return {"status": 200}
    except anthropic.APIStatusError as error:
        return {"status": error.status_code, "message": error.body["error"]["message"]}


def main():
    base, case = sys.argv[1], sys.argv[2]
    client = Anthropic(base_url=base, api_key="sk-ant-test", max_retries=0)
    if case in ("regex", "bm25"):
        text = "Find: weather" if case == "regex" else "Find: current weather"
        result = whole_and_streamed(client, ask(client, case, text))
    elif case == "history":
        request = ask(client, "regex", "Find: weather")
        first = client.beta.messages.create(**request)
        calls = [block for block in first.content if block.type == "tool_use"]
        messages = request["messages"] + [
            {"role": "assistant", "content": [block.model_dump(mode="json", exclude_none=True) for block in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "18 degrees"} for call in calls]},
        ]
        second = client.beta.messages.create(**{**request, "messages": messages})
        result = {"first": dump(first), "second": dump(second)}
    elif case == "bad":
        result = {}
        for name, pattern in [("invalid", "(unclosed"), ("long", "a" * 201), ("empty", "")]:
            message = client.beta.messages.create(**ask(client, "regex", f"Find: {pattern}"))
            result[name] = dump(message)
    elif case == "forever":
        result = whole_and_streamed(client, ask(client, "regex", "Always: inventory"))
    elif case == "refused":
        search = SEARCH["regex"]
        result = {
            "all_deferred": refused(client, ask(client, "regex", "Find: x") | {"tools": DEFERRED}),
            "unknown_reference": refused(client, ask(client, "regex", "x") | {"messages": [
                {"role": "user", "content": "Find: weather"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                              "content": [{"type": "tool_reference", "tool_name": "no_such_tool"}]}]}]}),
            "server_id": refused(client, ask(client, "regex", "x") | {"messages": [
                {"role": "user", "content": "Find: weather"},
                {"role": "assistant", "content": [{"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_regex", "input": {"pattern": "w"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "srvtoolu_1", "content": "x"}]}]}),
            "cached_deferred": refused(client, ask(client, "regex", "x") | {"tools": [search, DEFERRED[0] | {"cache_control": {"type": "ephemeral"}}]}),
        }
    else:
        raise SystemExit(f"unknown case {case}")
    print(json.dumps(result))


main()
