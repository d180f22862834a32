"""The official openai Python SDK and the OpenAI Agents SDK as clients of the gateway's
Responses API.

Run by tests/it/responses_sdk.rs as `python3 responses_client.py BASE_URL CASE [MODEL]`; prints
one JSON object for the Rust test to assert on. This script only asks and reports: every
judgement is made in the Rust test.

Cases:
  tools        responses.create, then the same request through responses.stream
               (get_final_response), with function tools and instructions
  custom       the same with a custom tool, reasoning and parallel calls
  json-schema  the same with text.format json_schema
  round-trip   a function call, then its function_call_output sent back with the history
  store        a stored response continued with previous_response_id, retrieved, deleted
  errors       requests the gateway refuses, as the SDK's typed exceptions
  agent        an OpenAI Agents SDK agent with one function tool, run whole and streamed

Exit status 3 means an SDK is not installed (the Rust test then says to run scripts/test).
"""

import json
import sys

try:
    import openai
    from openai import OpenAI
except ImportError as error:
    print(f"cannot import the openai SDK: {error}", file=sys.stderr)
    sys.exit(3)

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
PATCH = {"type": "custom", "name": "apply_patch", "description": "Edit files."}
SCHEMA = {
    "type": "json_schema",
    "name": "weather",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
        "required": ["city", "celsius"],
        "additionalProperties": False,
    },
}


def both(client, **request):
    """The same request whole and streamed through the SDK's stream helper."""
    whole = client.responses.create(**request)
    types = []
    with client.responses.stream(**request) as stream:
        for event in stream:
            types.append(event.type)
        final = stream.get_final_response()
    return {
        "whole": whole.model_dump(mode="json"),
        "streamed": final.model_dump(mode="json"),
        "whole_text": whole.output_text,
        "streamed_text": final.output_text,
        "event_types": types,
    }


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
        }
    except Exception as error:  # reported, judged in Rust
        return {"label": label, "class": type(error).__name__, "message": str(error)}
    return {"label": label, "class": None}


def round_trip(client, model):
    question = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.responses.create(model=model, input=question, tools=[WEATHER], store=False)
    call = next(item for item in first.output if item.type == "function_call")
    history = question + [item.model_dump(exclude_none=True) for item in first.output]
    history.append({"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21 C"})
    second = client.responses.create(model=model, input=history, tools=[WEATHER], store=False)
    return {"first": first.model_dump(mode="json"), "second_text": second.output_text}


def store(client, model):
    first = client.responses.create(model=model, input="Weather in Rome?", tools=[WEATHER], instructions="Be brief.")
    call = next(item for item in first.output if item.type == "function_call")
    output = [{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]
    second = client.responses.create(model=model, previous_response_id=first.id, input=output, tools=[WEATHER])
    retrieved = client.responses.retrieve(first.id)
    client.responses.delete(first.id)
    gone = refusal("retrieve", lambda: client.responses.retrieve(first.id))
    again = refusal(
        "continue",
        lambda: client.responses.create(model=model, previous_response_id=first.id, input=output, tools=[WEATHER]),
    )
    return {
        "first": first.model_dump(mode="json"),
        "retrieved": retrieved.model_dump(mode="json"),
        "second": second.model_dump(mode="json"),
        "second_text": second.output_text,
        "after_delete": [gone, again],
    }


def errors(client, model):
    def stream_failure():
        with client.responses.stream(model=model, input="hi") as stream:
            failed = [event.response.error.code for event in stream if event.type == "response.failed"]
            try:
                stream.get_final_response()
            except RuntimeError as error:
                raise RuntimeError(f"failed with {failed}: {error}") from error

    return {
        "errors": [
            refusal("temperature", lambda: client.responses.create(model=model, input="hi", temperature=5)),
            refusal(
                "call_id",
                lambda: client.responses.create(
                    model=model, input=[{"type": "function_call_output", "call_id": "call_none", "output": "x"}]
                ),
            ),
            refusal("model", lambda: client.responses.create(model="no-such-model", input="hi")),
            refusal(
                "previous",
                lambda: client.responses.create(model=model, input="hi", previous_response_id="resp_unknown"),
            ),
            refusal("rate_limit", lambda: client.responses.create(model=model, input="hi")),
            refusal("stream_cut", stream_failure),
        ]
    }


def agent(base_url, model):
    try:
        from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
        from openai import AsyncOpenAI
    except ImportError as error:
        print(f"cannot import the OpenAI Agents SDK: {error}", file=sys.stderr)
        sys.exit(3)
    import agents

    set_tracing_disabled(True)

    @function_tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        return f"In {city} it is 21 C and sunny (report 7f3a)."

    client = AsyncOpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0)
    weather_agent = Agent(
        name="Weather",
        instructions="Answer with the tool's report.",
        tools=[get_weather],
        model=OpenAIResponsesModel(model=model, openai_client=client),
    )
    async def both():
        whole = await Runner.run(weather_agent, "Weather in Paris?")
        streamed = Runner.run_streamed(weather_agent, "Weather in Paris?")
        async for _ in streamed.stream_events():
            pass
        return whole.final_output, streamed.final_output

    import asyncio

    whole, streamed = asyncio.run(both())
    return {"whole": whole, "streamed": streamed, "agents_version": agents.__version__}


def main():
    base_url, case = sys.argv[1], sys.argv[2]
    model = sys.argv[3] if len(sys.argv) > 3 else "native"
    client = OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0, timeout=30)
    if case == "tools":
        result = both(client, model=model, instructions="You are terse.", input="Weather in Paris?", tools=[WEATHER], store=False)
    elif case == "custom":
        result = both(
            client,
            model=model,
            input=[{"role": "user", "content": [{"type": "input_text", "text": "Patch and check the weather"}]}],
            tools=[WEATHER, PATCH],
            reasoning={"effort": "high", "summary": "auto"},
            store=False,
        )
    elif case == "json-schema":
        result = both(client, model=model, input="Weather in Paris as JSON", text={"format": SCHEMA}, store=False)
    elif case == "round-trip":
        result = round_trip(client, model)
    elif case == "store":
        result = store(client, model)
    elif case == "errors":
        result = errors(client, model)
    elif case == "agent":
        result = agent(base_url, model)
    else:
        print(f"unknown case {case!r}", file=sys.stderr)
        sys.exit(2)
    result["sdk_version"] = openai.__version__
    print(json.dumps(result))


if __name__ == "__main__":
    main()
