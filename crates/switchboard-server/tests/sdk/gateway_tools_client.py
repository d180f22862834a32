"""The official openai and anthropic Python SDKs and the OpenAI Agents SDK asking the
gateway to run MCP tools inside a request: OpenAI's `mcp` tool and Anthropic's MCP connector.

Run by tests/it/gateway_tools_sdk.rs as
`python3 gateway_tools_client.py BASE_URL CASE MODEL LABEL [URL]`; prints one JSON object for
the Rust test to assert on. This script only asks and reports: every judgement is made in the
Rust test.

Cases:
  openai      responses.create and responses.stream (get_final_response) with an mcp tool
              that runs without approval; the class of each output item as the SDK parsed it
  approval    an mcp tool that needs approval: the request, then the approval sent back with
              previous_response_id
  refused     an mcp tool whose server_url the gateway does not run
  agent       an OpenAI Agents SDK agent with a HostedMCPTool, run whole and streamed
  anthropic   client.beta.messages.create and .stream with mcp_servers and an mcp_toolset

Exit status 3 means an SDK is not installed (the Rust test then says to run scripts/test).
"""

import asyncio
import json
import sys

try:
    import openai
    from openai import OpenAI
    import anthropic
except ImportError as error:
    print(f"cannot import an SDK: {error}", file=sys.stderr)
    sys.exit(3)


def mcp_tool(label, approval, url=None):
    tool = {"type": "mcp", "server_label": label, "require_approval": approval}
    if url:
        tool["server_url"] = url
    return tool


def items(response):
    return [{"class": type(item).__name__, **item.model_dump(mode="json")} for item in response.output]


def openai_case(base, model, label, url):
    client = OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)
    request = dict(model=model, input="Use the tool, then tell me what it said.", store=False,
                   tools=[mcp_tool(label, "never", url)])
    whole = client.responses.create(**request)
    types = []
    with client.responses.stream(**request) as stream:
        for event in stream:
            types.append(event.type)
        final = stream.get_final_response()
    return {"whole": items(whole), "streamed": items(final), "whole_text": whole.output_text,
            "streamed_text": final.output_text, "event_types": types, "status": whole.status}


def approval_case(base, model, label, url):
    client = OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)
    tools = [mcp_tool(label, "always", url)]
    first = client.responses.create(model=model, input="Use the tool.", tools=tools)
    request = next(item for item in first.output if item.type == "mcp_approval_request")
    second = client.responses.create(
        model=model, previous_response_id=first.id, tools=tools,
        input=[{"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}])
    return {"first": items(first), "first_status": first.status, "second": items(second),
            "second_text": second.output_text}


def refused_case(base, model, label, url):
    client = OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)
    try:
        client.responses.create(model=model, input="x",
                                tools=[mcp_tool(label, "never", "http://10.1.2.3/mcp")])
    except openai.APIStatusError as error:
        return {"class": type(error).__name__, "status": error.status_code, "message": error.message}
    return {"class": None}


def agent_case(base, model, label, url):
    from agents import Agent, HostedMCPTool, OpenAIResponsesModel, Runner, set_tracing_disabled

    set_tracing_disabled(True)
    client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)
    agent = Agent(
        name="Echoer",
        instructions="Use the echo tool, then say what it returned.",
        model=OpenAIResponsesModel(model=model, openai_client=client),
        tools=[HostedMCPTool(tool_config=mcp_tool(label, "never", url))],
    )

    async def run():
        whole = await Runner.run(agent, "Echo something.")
        streamed = Runner.run_streamed(agent, "Echo something.")
        async for _ in streamed.stream_events():
            pass
        kinds = [type(item).__name__ for item in whole.new_items]
        return {"whole": whole.final_output, "streamed": streamed.final_output, "items": kinds}

    return asyncio.run(run())


def anthropic_case(base, model, label, url):
    client = anthropic.Anthropic(base_url=base, api_key="unused", max_retries=0)
    request = dict(
        model=model, max_tokens=300,
        messages=[{"role": "user", "content": "Use the tool, then tell me what it said."}],
        mcp_servers=[{"type": "url", "url": url, "name": label}],
        tools=[{"type": "mcp_toolset", "mcp_server_name": label}],
        betas=["mcp-client-2025-11-20"],
    )
    whole = client.beta.messages.create(**request)
    with client.beta.messages.stream(**request) as stream:
        for _ in stream:
            pass
        final = stream.get_final_message()
    blocks = lambda message: [{"class": type(block).__name__, **block.model_dump(mode="json")}
                              for block in message.content]
    return {"whole": blocks(whole), "streamed": blocks(final), "stop_reason": whole.stop_reason,
            "streamed_stop_reason": final.stop_reason}


CASES = {"openai": openai_case, "approval": approval_case, "refused": refused_case,
         "agent": agent_case, "anthropic": anthropic_case}

if __name__ == "__main__":
    base, case, model, label = sys.argv[1:5]
    url = sys.argv[5] if len(sys.argv) > 5 else None
    print(json.dumps(CASES[case](base, model, label, url)))
