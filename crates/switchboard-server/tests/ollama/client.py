"""The official `ollama` Python client (what Home Assistant uses) as a client of the gateway.

Run by tests/it/ollama_api.rs as `python3 client.py BASE_URL KEY CASE [MODEL]`; prints one
JSON object on stdout for the Rust test to assert on. What the client makes of the gateway's
answers is the point, so this script only asks and reports.

Cases:
  catalogue  list, show, ps, pull (a served and an unknown name), and a wrong key
  chat       on MODEL, in this order (one backend answer each): text whole, text streamed,
             a tool call whole, the same streamed, the tool-result round trip, format="json",
             format=<schema>, generate whole, generate streamed
  calls      on MODEL: a tool call whole, then streamed (a prompted route's, say)
  character  MODEL whole, then "character/<MODEL>:latest" streamed (a character's turn each)
  home-assistant
             Home Assistant's Ollama integration on MODEL, as homeassistant/components/ollama
             calls the client: the model list at set-up, a pull of a model missing from it,
             then a streamed turn with its LLM API's tools, `keep_alive` -1 (forever; other
             values as "300s"), `options` {"num_ctx": 8192} and `format` None; the call it
             gets back goes into the history as the integration writes it (no id, no index)
             with the result as a tool message of {"data", "error"} without `tool_name`,
             and the follow-up turn streams the answer

Exit status 3 means the client is not installed (the Rust test then says to run scripts/test).
"""

import json
import sys
from datetime import datetime

try:
    import ollama
    from ollama import Client, ResponseError
except ImportError as error:
    print(f"cannot import the ollama client: {error}", file=sys.stderr)
    sys.exit(3)

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city", "parameters": CITY}}]
MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Weather in Paris?"}]


def calls(message):
    return [
        {"name": call.function.name, "arguments": call.function.arguments}
        for call in message.tool_calls or []
    ]


def whole(response):
    return {
        "model": response.model,
        "content": response.message.content,
        "thinking": response.message.thinking,
        "tool_calls": calls(response.message),
        "done": response.done,
        "done_reason": response.done_reason,
        "prompt_eval_count": response.prompt_eval_count,
        "eval_count": response.eval_count,
        "total_duration": response.total_duration,
    }


def streamed(chunks):
    """The stream folded as an application folds it, with what each chunk looked like."""
    content, tool_calls, last, count = "", [], None, 0
    for chunk in chunks:
        count += 1
        content += chunk.message.content or ""
        tool_calls += calls(chunk.message)
        last = chunk
    return {
        "model": last.model,
        "content": content,
        "tool_calls": tool_calls,
        "done": last.done,
        "done_reason": last.done_reason,
        "prompt_eval_count": last.prompt_eval_count,
        "eval_count": last.eval_count,
        "total_duration": last.total_duration,
        "chunks": count,
    }


def generated(response):
    return {"model": response.model, "response": response.response, "done": response.done,
            "done_reason": response.done_reason, "eval_count": response.eval_count}


def error(call):
    try:
        call()
    except ResponseError as failure:
        return {"status": failure.status_code, "error": failure.error}
    return None


def catalogue(client, base):
    shown = client.show("qwen")
    character = client.show("narrator:latest")
    pulled = [progress.status for progress in client.pull("qwen:latest", stream=True)]
    stranger = Client(host=base, headers={"Authorization": "Bearer not-the-key"})
    # Open WebUI reads the raw `expires_at` with datetime.fromisoformat.
    raw = client._client.get("/api/ps").json()["models"][0]["expires_at"]
    return {
        "expires_at_raw": datetime.fromisoformat(raw).isoformat(),
        "list": [model.model for model in client.list().models],
        "show": {"details": shown.details.model_dump(), "model_info": dict(shown.modelinfo or {}),
                 "capabilities": shown.capabilities},
        "show_character": {"capabilities": character.capabilities},
        "ps": [{"model": model.model, "expires_at": model.expires_at.isoformat()} for model in client.ps().models],
        "pull_streamed": pulled,
        "pull_whole": client.pull("qwen", stream=False).status,
        "pull_unknown": error(lambda: client.pull("no-such-model", stream=False)),
        "pull_unknown_streamed": error(lambda: list(client.pull("no-such-model", stream=True))),
        "show_unknown": error(lambda: client.show("no-such-model")),
        "wrong_key": error(lambda: stranger.list()),
    }


def chat(client, model):
    result = {
        "text": whole(client.chat(model=model, messages=MESSAGES)),
        "text_streamed": streamed(client.chat(model=model, messages=MESSAGES, stream=True)),
    }
    first = client.chat(model=model, messages=MESSAGES, tools=TOOLS, keep_alive=-1.0,
                        options={"temperature": 0.2, "num_ctx": 8192, "num_predict": 64})
    result["call"] = whole(first)
    result["call_streamed"] = streamed(client.chat(model=model, messages=MESSAGES, tools=TOOLS, stream=True))
    history = MESSAGES + [first.message, {"role": "tool", "content": "18 C and sunny", "tool_name": "get_weather"}]
    result["round_trip"] = whole(client.chat(model=model, messages=history, tools=TOOLS))
    result["json"] = whole(client.chat(model=model, messages=MESSAGES, format="json"))
    result["schema"] = whole(client.chat(model=model, messages=MESSAGES, format=CITY))
    result["generate"] = generated(client.generate(model=model, prompt="Say hi", system="Be brief."))
    parts = list(client.generate(model=model, prompt="Say hi", stream=True))
    result["generate_streamed"] = {"response": "".join(part.response for part in parts),
                                   "done": parts[-1].done, "done_reason": parts[-1].done_reason}
    return result


def tool_calls(client, model):
    return {
        "call": whole(client.chat(model=model, messages=MESSAGES, tools=TOOLS)),
        "call_streamed": streamed(client.chat(model=model, messages=MESSAGES, tools=TOOLS, stream=True)),
    }


def character(client, name):
    turn = [{"role": "user", "content": "I search the old desk."}]
    return {
        "whole": whole(client.chat(model=name, messages=turn)),
        "streamed": streamed(client.chat(model=f"character/{name}:latest", messages=turn, stream=True)),
    }


HASS_TOOLS = [
    {"type": "function", "function": {
        "name": "HassTurnOn",
        "description": "Turns on/opens/presses a device or entity",
        "parameters": {"type": "object", "properties": {
            "name": {"type": "string"}, "area": {"type": "string"},
            "domain": {"type": "array", "items": {"type": "string"}},
        }, "required": []},
    }},
    {"type": "function", "function": {
        "name": "HassTurnOff",
        "description": "Turns off/closes a device or entity",
        "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": []},
    }},
]


def home_assistant(client, model):
    listed = [entry.model for entry in client.list().models]
    pulled = None
    if model not in listed:
        # What the integration does with a model the server does not list.
        pulled = client.pull(model).status
    history = [
        {"role": "system", "content": "You are a voice assistant for Home Assistant."},
        {"role": "user", "content": "Turn on the kitchen light"},
    ]

    def turn(messages):
        content, tool_calls = "", []
        for chunk in client.chat(model=model, messages=messages, tools=HASS_TOOLS, stream=True,
                                 keep_alive=-1, options={"num_ctx": 8192}, think=None, format=None):
            content += chunk.message.content or ""
            for call in chunk.message.tool_calls or []:
                tool_calls.append({"name": call.function.name, "arguments": dict(call.function.arguments)})
        return content, tool_calls

    first_content, first_calls = turn(history)
    history.append(ollama.Message(role="assistant", content=first_content, tool_calls=[
        ollama.Message.ToolCall(function=ollama.Message.ToolCall.Function(name=call["name"], arguments=call["arguments"]))
        for call in first_calls
    ]))
    result = {"data": {"success": [{"name": "Kitchen light", "type": "entity", "id": "light.kitchen"}], "failed": []},
              "error": None}
    history.append(ollama.Message(role="tool", content=json.dumps(result)))
    second_content, second_calls = turn(history)
    return {"listed": listed, "pulled": pulled, "first_calls": first_calls,
            "answer": second_content, "second_calls": second_calls}


def main():
    base, key, case = sys.argv[1], sys.argv[2], sys.argv[3]
    model = sys.argv[4] if len(sys.argv) > 4 else None
    client = Client(host=base, headers={"Authorization": f"Bearer {key}"})
    result = {
        "catalogue": lambda: catalogue(client, base),
        "chat": lambda: chat(client, model),
        "calls": lambda: tool_calls(client, model),
        "character": lambda: character(client, model),
        "home-assistant": lambda: home_assistant(client, model),
    }[case]()
    print(json.dumps(result, default=str))


main()
