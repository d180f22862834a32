"""The official google-genai Python SDK as a client of the gateway's Gemini API.

Run by tests/it/gemini.rs as `python3 client.py BASE_URL CASE`; prints one JSON object on
stdout for the Rust test to assert on. What the SDK makes of the gateway's answers is the
point, so this script only asks and reports: every judgement is made in the Rust test.

Cases:
  text       generate_content, then the same request through generate_content_stream
  tools      a function call, whole and streamed (model "native")
  round-trip a function call answered with a functionResponse in a second request
  automatic  automatic function calling with a Python function
  any        toolConfig ANY with allowedFunctionNames
  count      count_tokens
  models     models.list (a page of one at a time) and models.get
  prompted   the "hermes" route (prompted tool calling), whole and streamed
  narrator   character/narrator, its tool run in the gateway
  errors     requests the gateway refuses, as the SDK raises them
  slow       model "local", whose route's MCP server runs a slow tool in the gateway (the
             stream keeps alive meanwhile), whole and streamed

Exit status 3 means the SDK is not installed (the Rust test then says to run scripts/test).
"""

import json
import sys

try:
    from google import genai
    from google.genai import errors, types
except ImportError as error:  # the Rust side turns this into a failed test with advice
    print(f"cannot import the google-genai SDK: {error}", file=sys.stderr)
    sys.exit(3)

WEATHER = types.FunctionDeclaration(
    name="get_weather",
    description="Current weather in a city",
    parameters=types.Schema(
        type="OBJECT",
        properties={"city": types.Schema(type="STRING")},
        required=["city"],
    ),
)
TIME = types.FunctionDeclaration(
    name="get_time",
    description="Local time in a city",
    parameters_json_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
TOOLS = [types.Tool(function_declarations=[WEATHER, TIME])]
QUESTION = "Weather and time in Paris?"


def dump(response):
    """What the SDK read: the text, the calls, the finish and the usage."""
    candidate = response.candidates[0] if response.candidates else None
    calls = [
        {"id": call.id, "name": call.name, "args": call.args}
        for call in (response.function_calls or [])
    ]
    usage = response.usage_metadata
    return {
        "text": response.text if candidate and candidate.content else None,
        "calls": calls,
        "finish": candidate.finish_reason.value if candidate and candidate.finish_reason else None,
        "usage": usage.model_dump(mode="json", exclude_none=True) if usage else None,
        "model_version": response.model_version,
        "response_id": response.response_id,
    }


def streamed(chunks):
    """The stream as one answer: its texts joined, its calls in order, the last finish."""
    text, calls, finish, usage, count = "", [], None, None, 0
    for chunk in chunks:
        count += 1
        read = dump(chunk)
        text += read["text"] or ""
        calls += read["calls"]
        finish = read["finish"] or finish
        usage = read["usage"] or usage
    return {"text": text or None, "calls": calls, "finish": finish, "usage": usage, "chunks": count}


def whole_and_streamed(client, model, contents, config=None):
    whole = client.models.generate_content(model=model, contents=contents, config=config)
    chunks = client.models.generate_content_stream(model=model, contents=contents, config=config)
    return {"whole": dump(whole), "streamed": streamed(chunks)}


def round_trip(client):
    config = types.GenerateContentConfig(tools=TOOLS, system_instruction="You are terse.")
    first = client.models.generate_content(model="native", contents=QUESTION, config=config)
    call = first.function_calls[0]
    history = [
        types.Content(role="user", parts=[types.Part(text=QUESTION)]),
        first.candidates[0].content,
        types.Content(
            role="user",
            parts=[types.Part.from_function_response(name=call.name, response={"output": "22°C and sunny"})],
        ),
    ]
    # The SDK does not send the call's id back with the response: the gateway matches it.
    second = client.models.generate_content(model="native", contents=history, config=config)
    return {"first": dump(first), "second": dump(second)}


def get_weather(city: str) -> str:
    """Current weather in a city."""
    return f"22°C and sunny in {city}"


def automatic(client):
    config = types.GenerateContentConfig(tools=[get_weather])
    answer = client.models.generate_content(model="native", contents="Weather in Paris?", config=config)
    history = answer.automatic_function_calling_history or []
    return {"answer": dump(answer), "history": [content.model_dump(mode="json", exclude_none=True) for content in history]}


def forced(client):
    config = types.GenerateContentConfig(
        tools=TOOLS,
        tool_config=types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(mode="ANY", allowed_function_names=["get_time"])
        ),
    )
    return dump(client.models.generate_content(model="native", contents=QUESTION, config=config))


def models(client):
    listed = [model.name for model in client.models.list(config={"page_size": 1})]
    got = client.models.get(model="native")
    character = client.models.get(model="character/narrator")
    return {"listed": listed, "got": got.name, "character": character.name}


def refusal(label, ask):
    try:
        ask()
    except errors.APIError as error:
        return {"label": label, "code": error.code, "status": error.status, "message": error.message}
    return {"label": label, "code": None}


def refusals(client, base):
    bad_key = genai.Client(api_key="wrong", http_options=types.HttpOptions(base_url=base))
    return [
        refusal("unknown model", lambda: client.models.generate_content(model="nope", contents="hi")),
        refusal("wrong key", lambda: bad_key.models.generate_content(model="native", contents="hi")),
        refusal(
            "two candidates",
            lambda: client.models.generate_content(
                model="native", contents="hi", config=types.GenerateContentConfig(candidate_count=2)
            ),
        ),
    ]


def main():
    base, case = sys.argv[1], sys.argv[2]
    client = genai.Client(api_key="sk-gemini-test", http_options=types.HttpOptions(base_url=base))
    if case == "text":
        result = whole_and_streamed(client, "native", "Say hello.")
    elif case == "tools":
        result = whole_and_streamed(client, "native", QUESTION, types.GenerateContentConfig(tools=TOOLS))
    elif case == "round-trip":
        result = round_trip(client)
    elif case == "automatic":
        result = automatic(client)
    elif case == "any":
        result = forced(client)
    elif case == "count":
        result = {"total": client.models.count_tokens(model="native", contents=QUESTION).total_tokens}
    elif case == "models":
        result = models(client)
    elif case == "prompted":
        result = whole_and_streamed(client, "hermes", QUESTION, types.GenerateContentConfig(tools=TOOLS))
    elif case == "narrator":
        result = whole_and_streamed(client, "character/narrator", "I search the old desk.")
    elif case == "errors":
        result = refusals(client, base)
    elif case == "slow":
        result = whole_and_streamed(client, "local", "Run the long operation.")
    else:
        raise SystemExit(f"unknown case {case}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
