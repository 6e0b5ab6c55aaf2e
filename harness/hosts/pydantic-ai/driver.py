"""pydantic-ai as a host under test: one agent run the way its MCP docs show it.

`load_mcp_toolsets` reads the harness's `mcpServers` configuration (one stdio server, its tools
prefixed with the server's name), the agent is given the toolsets, and `agent.run(prompt)` runs
the model loop to its end. The model is pydantic-ai's Anthropic model with the Anthropic
provider's `base_url` at the scripted model server and a dummy key.
Usage: python driver.py MODEL_URL MCP_CONFIG PROMPT
"""

import asyncio
import sys

from pydantic_ai import Agent
from pydantic_ai.mcp import load_mcp_toolsets
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider


async def main(model_url: str, mcp_config: str, prompt: str) -> int:
    model = AnthropicModel(
        "claude-sonnet-4-5",
        provider=AnthropicProvider(api_key="dummy", base_url=model_url),
    )
    agent = Agent(model, toolsets=load_mcp_toolsets(mcp_config))
    async with agent:
        result = await agent.run(prompt)
    print(result.output)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:4])))
