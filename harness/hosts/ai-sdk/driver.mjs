// The AI SDK (`ai` + `@ai-sdk/mcp` + `@ai-sdk/anthropic`) as a host under test: one agent run the
// way the package's README shows it (createMCPClient, `tools()` once, generateText with a step
// bound, close), its MCP server the stdio one of the harness's configuration, its model the
// scripted model server. Usage: node driver.mjs MODULES_DIR MODEL_URL MCP_CONFIG PROMPT
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [modules, modelUrl, mcpConfig, prompt] = process.argv.slice(2);
const resolve = createRequire(`${modules}/`).resolve;
const load = (name) => import(pathToFileURL(resolve(name)).href);
const { generateText, isStepCount } = await load('ai');
const { createMCPClient } = await load('@ai-sdk/mcp');
const { Experimental_StdioMCPTransport } = await load('@ai-sdk/mcp/mcp-stdio');
const { createAnthropic } = await load('@ai-sdk/anthropic');

const server = JSON.parse(readFileSync(mcpConfig, 'utf8')).mcpServers.listsync;
const anthropic = createAnthropic({ baseURL: `${modelUrl}/v1`, apiKey: 'dummy' });
const mcpClient = await createMCPClient({
  transport: new Experimental_StdioMCPTransport({ command: server.command, args: server.args }),
});
let code = 0;
try {
  const tools = await mcpClient.tools();
  const { text, steps } = await generateText({
    model: anthropic('claude-sonnet-4-5'),
    tools,
    stopWhen: isStepCount(20),
    prompt,
  });
  console.log(JSON.stringify({ steps: steps.length, text }));
} catch (e) {
  console.error(`ai-sdk driver: ${e?.stack ?? e}`);
  code = 1;
} finally {
  await mcpClient.close();
}
process.exit(code);
