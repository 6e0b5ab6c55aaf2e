// Mastra (`@mastra/core` Agent + `@mastra/mcp` MCPClient) as a host under test: one agent run
// the way Mastra's MCP docs show it (an MCPClient with the stdio server, `tools: await
// mcp.listTools()` given to the Agent, `agent.generate(prompt, { maxSteps })`, disconnect), its
// model `@ai-sdk/anthropic` at the scripted model server.
// Usage: node driver.mjs MODULES_DIR MODEL_URL MCP_CONFIG PROMPT
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [modules, modelUrl, mcpConfig, prompt] = process.argv.slice(2);
const resolve = createRequire(`${modules}/`).resolve;
const load = (name) => import(pathToFileURL(resolve(name)).href);
const { MCPClient } = await load('@mastra/mcp');
const { Agent } = await load('@mastra/core/agent');
const { createAnthropic } = await load('@ai-sdk/anthropic');

const server = JSON.parse(readFileSync(mcpConfig, 'utf8')).mcpServers.listsync;
const anthropic = createAnthropic({ baseURL: `${modelUrl}/v1`, apiKey: 'dummy' });
const mcp = new MCPClient({
  servers: { listsync: { command: server.command, args: server.args } },
});
let code = 0;
try {
  const agent = new Agent({
    id: 'listsync-host',
    name: 'listsync host',
    instructions: 'Use the tools as asked.',
    model: anthropic('claude-sonnet-4-5'),
    tools: await mcp.listTools(),
  });
  const result = await agent.generate(prompt, { maxSteps: 20 });
  console.log(JSON.stringify({ steps: result.steps?.length, text: result.text }));
} catch (e) {
  console.error(`mastra driver: ${e?.stack ?? e}`);
  code = 1;
} finally {
  await mcp.disconnect();
}
process.exit(code);
