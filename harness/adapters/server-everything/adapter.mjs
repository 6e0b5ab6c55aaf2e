// listsync server adapter for @modelcontextprotocol/server-everything (the MCP reference "everything"
// server, built on @modelcontextprotocol/sdk v1's McpServer), server role only.
//
// The adapter builds the server exactly as the package's own stdio entry point does (`createServer()`, then
// `server.connect(new StdioServerTransport())`) and changes nothing in it. Its catalog is fixed: a dozen
// tools, four prompts, its file resources and templates. What changes it at run time, in the pinned version:
//
// - after `notifications/initialized`, `registerConditionalTools` registers the tools the client's
//   capabilities allow (roots, sampling, elicitation, tasks), each registration sending its own
//   `notifications/tools/list_changed` (the SDK's McpServer notifies per registration);
// - its `gzip-file-as-resource` tool registers a session resource `demo://resource/session/NAME`
//   (`notifications/resources/list_changed`; calling it again with the same name removes and re-registers
//   it: two notifications).
//
// So `mutate` does only what the server itself can do on command: `add` (and `update`, which is the tool's
// own remove + register) of a resource `demo://resource/session/NAME` with an empty description, by running
// the server's own `gzip-file-as-resource` handler on a `data:` URL. Every other op (tools, prompts,
// templates, removals, descriptions) is refused whole with the reason, as is a non-empty LISTSYNC_INITIAL,
// and `notify` (the server has no command that sends a list_changed). Nothing is faked: the manifest says
// `[server] mutates = ["resources"]`, so the harness reports the traces and scenarios that change tools as
// not applicable.
import process from 'node:process';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createServer } from '@modelcontextprotocol/server-everything/dist/server/index.js';
import { main } from '../js-common/main.mjs';
import { Gates, KINDS, checkOp } from '../js-common/control.mjs';

const SESSION = 'demo://resource/session/';
const GZIP = 'gzip-file-as-resource';

/** Why the server cannot apply `op`, or null when its own tool can. */
function refusal(op, catalog) {
    const bad = checkOp(op);
    if (bad) return bad;
    if (op.op === 'set_content') return 'server-everything has no command that changes a resource\'s content';
    if (op.kind !== 'resources') return `server-everything cannot ${op.op} ${op.kind} on command: its ${op.kind} are fixed`;
    if (op.op === 'remove') return 'server-everything has no command that removes a resource';
    if (!op.name.startsWith(SESSION) || op.name.length === SESSION.length) {
        return `server-everything adds only session resources named ${SESSION}NAME (its ${GZIP} tool)`;
    }
    if (op.description) return `server-everything's ${GZIP} tool registers a resource without a description`;
    const present = catalog('resources').some(i => i.name === op.name);
    if (op.op === 'add' && present) return `resource ${op.name} already exists`;
    if (op.op === 'update' && !present) return `resource ${op.name} does not exist`;
    return null;
}

async function runServer({ control, env, sdk }) {
    const variant = env.variant ?? 'stdio';
    if (variant !== 'stdio') throw new Error(`unknown LISTSYNC_VARIANT '${variant}' (stdio)`);
    if (env.initial.length > 0) {
        throw new Error('server-everything has a fixed catalog: it cannot start with LISTSYNC_INITIAL (give an empty one)');
    }
    const { server, cleanup } = createServer();
    const gates = new Gates(control);
    const tools = () => server._registeredTools;
    const catalog = kind => {
        const pick = (reg, nameOf, descOf) =>
            Object.entries(reg)
                .filter(([, v]) => v.enabled)
                .map(([k, v]) => ({ name: nameOf(k, v), description: descOf(v) ?? '' }));
        if (kind === 'tools') return pick(server._registeredTools, k => k, v => v.description);
        if (kind === 'prompts') return pick(server._registeredPrompts, k => k, v => v.description);
        if (kind === 'resources') return pick(server._registeredResources, k => k, v => v.metadata?.description);
        return pick(server._registeredResourceTemplates, (k, v) => v.resourceTemplate.uriTemplate.toString(), v => v.metadata?.description);
    };
    // Observe every tool the server registers (now and after initialization): dispatched, gates, call_done.
    const observed = new WeakSet();
    const observe = () => {
        for (const [name, t] of Object.entries(tools())) {
            if (observed.has(t)) continue;
            observed.add(t);
            const handler = t.handler;
            t.handler = async (...args) => {
                control.event('dispatched', { tool: name, present: tools()[name]?.enabled === true });
                await gates.pass(name);
                try {
                    return await handler(...args);
                } finally {
                    control.event('call_done', { tool: name });
                }
            };
        }
    };
    observe();
    const initialized = server.server.oninitialized;
    server.server.oninitialized = async () => {
        await initialized?.();
        observe();
    };

    let queue = Promise.resolve(); // one batch at a time, as one unit
    control.on('mutate', cmd => {
        const run = queue.then(async () => {
            if (!Array.isArray(cmd.ops)) throw new Error('mutate needs ops: [...]');
            // The whole batch is checked first: a batch with one op the server cannot do changes nothing.
            const names = new Set(catalog('resources').map(i => i.name));
            for (const [i, op] of cmd.ops.entries()) {
                const why = refusal(op, () => [...names].map(name => ({ name })));
                if (why) throw new Error(`op ${i}: ${why}; nothing applied`);
                names.add(op.name);
            }
            for (const op of cmd.ops) {
                const name = op.name.slice(SESSION.length);
                const data = `data:text/plain;base64,${Buffer.from(`${op.op} ${op.name}`).toString('base64')}`;
                await tools()[GZIP].handler({ name, data, outputType: 'resourceLink' }, {});
            }
            return { via: GZIP };
        });
        queue = run.catch(() => {});
        return run;
    });
    control.on('notify', async () => {
        throw new Error('server-everything has no command that sends a list_changed notification');
    });
    control.on('catalog', async cmd => {
        if (!KINDS.includes(cmd.kind)) throw new Error(`unknown kind '${cmd.kind}'`);
        return { items: catalog(cmd.kind) };
    });
    control.on('gate_call', async cmd => ({ gate: gates.arm(cmd.tool) }));
    control.on('release', async cmd => {
        gates.release(cmd.gate);
        return {};
    });
    control.on('shutdown', async () => ({}));

    const transport = new StdioServerTransport(process.stdin, process.stdout);
    // Observe (never alter) what the server hands its transport, to report `notified`.
    const send = transport.send.bind(transport);
    transport.send = message => {
        if (message?.method?.startsWith('notifications/') && message.id === undefined) {
            control.event('notified', { method: message.method, params: message.params ?? null });
        }
        return send(message);
    };
    control.onShutdown = async () => {
        await server.close();
        cleanup();
    };
    await server.connect(transport);
    control.event('ready', {
        impl: 'server-everything',
        role: 'server',
        sdk: sdk.name,
        sdk_version: sdk.version,
        era_requested: env.era,
        variant,
        page_size: env.pageSize
    });
}

await main({
    dirUrl: new URL('./', import.meta.url),
    sdkPackage: '@modelcontextprotocol/server-everything',
    runServer,
    runClient: async () => {
        throw new Error('server-everything is a server: it has no client role');
    }
});
