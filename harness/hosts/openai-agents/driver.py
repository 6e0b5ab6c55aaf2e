"""The OpenAI Agents SDK (openai-agents) as a host under test, the way its MCP docs show it.

An `MCPServerStdio` for the harness's stdio server (`cache_tools_list` left at its default,
False: the SDK lists the server's tools at every turn), an `Agent(mcp_servers=[server])`, one
`Runner.run(agent, prompt)`. The model is the SDK's LiteLLM model (`LitellmModel`, its
documented way to use a non-OpenAI model) naming an Anthropic model, with `base_url` at the
scripted model server (the Anthropic Messages API) and a dummy key; tracing is disabled.
Usage: python driver.py MODEL_URL MCP_CONFIG PROMPT
"""

import asyncio
import json
import sys

from agents import Agent, Runner, set_tracing_disabled
from agents.extensions.models.litellm_model import LitellmModel
from agents.mcp import MCPServerStdio


async def main(model_url: str, mcp_config: str, prompt: str) -> int:
    set_tracing_disabled(True)
    with open(mcp_config, encoding="utf-8") as f:
        server = json.load(f)["mcpServers"]["listsync"]
    model = LitellmModel(model="anthropic/claude-sonnet-4-5", base_url=model_url, api_key="dummy")
    async with MCPServerStdio(
        name="listsync", params={"command": server["command"], "args": server["args"]}
    ) as mcp:
        agent = Agent(
            name="listsync host",
            instructions="Use the tools as asked.",
            mcp_servers=[mcp],
            model=model,
        )
        result = await Runner.run(agent, prompt)
    print(result.final_output)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:4])))
