// listsync server adapter for the TypeScript MCP SDK v2 (@modelcontextprotocol/server), served the v2 way:
// `serveStdio(factory)` decides the era from the client's opening message (2025 `initialize` or a
// 2026-07-28 enveloped request) and pins one instance from the factory for the connection. Variants:
// `mcpserver` (McpServer + register*/RegisteredX.update/remove; notifications exactly as the SDK sends them
// by itself; on a 2026-07-28 connection serveStdio reroutes them onto subscriptions/listen streams),
// `mcpserver-coalesced` (same, with the SDK's `debouncedNotificationMethods`), `lowlevel` (low-level Server,
// hand-written offset-cursor pagination, one send*ListChanged() per touched kind after each batch).
import process from 'node:process';
import { McpServer, ProtocolError, ProtocolErrorCode, ResourceNotFoundError, ResourceTemplate, Server } from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { CatalogModel, Gates, KINDS } from '../js-common/control.mjs';

const SERVER_INFO = { name: 'listsync-ts-v2-server', version: '0.1.0' };
const LIST_CHANGED = {
    tools: 'notifications/tools/list_changed',
    prompts: 'notifications/prompts/list_changed',
    resources: 'notifications/resources/list_changed',
    resource_templates: 'notifications/resources/list_changed'
};

export async function runServer({ control, env, sdk }) {
    const variant = env.variant ?? 'mcpserver';
    if (!['mcpserver', 'mcpserver-coalesced', 'lowlevel'].includes(variant)) {
        throw new Error(`unknown LISTSYNC_VARIANT '${variant}' (mcpserver, mcpserver-coalesced, lowlevel)`);
    }
    const gates = new Gates(control);
    const model = new CatalogModel();
    model.apply(env.initial);
    const build = variant === 'lowlevel' ? lowLevel : highLevel;
    // serveStdio calls the factory once per connection (plus once for a discarded server/discover probe):
    // each call builds a fresh instance from the catalog as it stands; mutations go to the latest one.
    let current; // { instance, era, applyOps, afterBatch, notify, catalog }
    const factory = ({ era }) => {
        current = build({ control, env, gates, model, variant, era });
        control.event('log', { message: `serveStdio built a ${era} instance` });
        return current.instance;
    };

    control.on('mutate', async cmd => {
        if (!Array.isArray(cmd.ops)) throw new Error('mutate needs ops: [...]');
        model.clone().apply(cmd.ops); // rejects the whole batch before the SDK sees any op
        current?.applyOps(cmd.ops);
        model.apply(cmd.ops);
        await current?.afterBatch(cmd.ops);
        return {};
    });
    control.on('notify', async cmd => {
        if (!current) throw new Error('no connection yet: serveStdio has not built an instance');
        return current.notify(cmd);
    });
    control.on('catalog', async cmd => {
        if (!KINDS.includes(cmd.kind)) throw new Error(`unknown kind '${cmd.kind}'`);
        return { items: current ? current.catalog(cmd.kind) : model.list(cmd.kind), instance: current ? current.era : null };
    });
    control.on('gate_call', async cmd => ({ gate: gates.arm(cmd.tool) }));
    control.on('release', async cmd => {
        gates.release(cmd.gate);
        return {};
    });
    control.on('shutdown', async () => ({}));

    const wire = new StdioServerTransport(process.stdin, process.stdout);
    const send = wire.send.bind(wire);
    wire.send = (message, options) => {
        // Observe (never alter) what leaves on the wire, to report `notified`.
        if (message && typeof message.method === 'string' && message.method.startsWith('notifications/') && message.id === undefined) {
            control.event('notified', { method: message.method, params: message.params ?? null });
        }
        return send(message, options);
    };
    const handle = serveStdio(factory, {
        transport: wire,
        onerror: err => control.event('log', { message: `serveStdio: ${err?.message ?? String(err)}` })
    });
    control.onShutdown = () => handle.close();
    control.event('ready', {
        impl: 'ts-v2',
        role: 'server',
        sdk: '@modelcontextprotocol/server',
        sdk_version: sdk.version,
        era_requested: env.era,
        variant,
        page_size: env.pageSize
    });
}

function textResult(text) {
    return { content: [{ type: 'text', text }] };
}

function highLevel({ control, env, gates, model, variant, era }) {
    const options = {
        capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true } }
    };
    if (variant === 'mcpserver-coalesced') options.debouncedNotificationMethods = Object.values(LIST_CHANGED);
    if (env.pageSize > 0) {
        control.event('log', { message: `McpServer ignores cursors: LISTSYNC_PAGE_SIZE=${env.pageSize} has no effect (use variant lowlevel)` });
    }
    const mcp = new McpServer(SERVER_INFO, options);
    const handles = Object.fromEntries(KINDS.map(k => [k, new Map()]));
    const toolCb = (name, description) => async () => {
        const t = mcp._registeredTools[name];
        control.event('dispatched', { tool: name, present: !!t && t.enabled });
        await gates.pass(name);
        control.event('call_done', { tool: name });
        return textResult(`${name}:${description}`);
    };
    const promptCb = (name, description) => async () => ({
        messages: [{ role: 'user', content: { type: 'text', text: `${name}:${description}` } }]
    });
    const readCb = async uri => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: model.content(uri.href) }] });
    function add(op) {
        const d = op.description ?? '';
        let h;
        if (op.kind === 'tools') h = mcp.registerTool(op.name, { description: d }, toolCb(op.name, d));
        else if (op.kind === 'prompts') h = mcp.registerPrompt(op.name, { description: d }, promptCb(op.name, d));
        else if (op.kind === 'resources') h = mcp.registerResource(op.name, op.name, { description: d, mimeType: 'text/plain' }, readCb);
        else h = mcp.registerResource(op.name, new ResourceTemplate(op.name, { list: undefined }), { description: d }, readCb);
        handles[op.kind].set(op.name, h);
    }
    function applyOps(ops) {
        for (const op of ops) {
            const d = op.description ?? '';
            if (op.op === 'add') add(op);
            else if (op.op === 'remove') {
                handles[op.kind].get(op.name).remove();
                handles[op.kind].delete(op.name);
            } else if (op.op === 'update') {
                const h = handles[op.kind].get(op.name);
                if (op.kind === 'tools') h.update({ description: d, callback: toolCb(op.name, d) });
                else if (op.kind === 'prompts') h.update({ description: d, callback: promptCb(op.name, d) });
                else if (op.kind === 'resources') h.update({ metadata: { description: d, mimeType: 'text/plain' } });
                else h.update({ metadata: { description: d } });
            }
        }
    }
    // Populate from the catalog as it stands (not connected yet: nothing is sent).
    for (const kind of KINDS) for (const it of model.list(kind)) add({ op: 'add', kind, name: it.name, description: it.description });
    return {
        instance: mcp,
        era,
        applyOps,
        async afterBatch() {},
        async notify(cmd) {
            if (cmd.kind === 'tools') mcp.sendToolListChanged();
            else if (cmd.kind === 'prompts') mcp.sendPromptListChanged();
            else if (cmd.kind === 'resources' || cmd.kind === 'resource_templates') mcp.sendResourceListChanged();
            else if (cmd.kind === 'resource_updated') {
                if (typeof cmd.uri !== 'string') throw new Error('notify resource_updated needs uri');
                await mcp.server.sendResourceUpdated({ uri: cmd.uri });
            } else throw new Error(`unknown kind '${cmd.kind}'`);
            return {};
        },
        catalog(kind) {
            const pick = (reg, nameOf, descOf) =>
                Object.entries(reg)
                    .filter(([, v]) => v.enabled)
                    .map(([k, v]) => ({ name: nameOf(k, v), description: descOf(v) ?? '' }));
            if (kind === 'tools') return pick(mcp._registeredTools, k => k, v => v.description);
            if (kind === 'prompts') return pick(mcp._registeredPrompts, k => k, v => v.description);
            if (kind === 'resources') return pick(mcp._registeredResources, k => k, v => v.metadata?.description);
            return pick(mcp._registeredResourceTemplates, (k, v) => v.resourceTemplate.uriTemplate.toString(), v => v.metadata?.description);
        }
    };
}

function lowLevel({ control, env, gates, model, era }) {
    const server = new Server(SERVER_INFO, {
        capabilities: {
            tools: { listChanged: true },
            prompts: { listChanged: true },
            resources: { listChanged: true, subscribe: true }
        }
    });
    const subscribed = new Set();
    function page(items, cursor) {
        if (env.pageSize <= 0) return { items };
        let offset = 0;
        if (cursor !== undefined) {
            offset = /^\d+$/.test(cursor) ? Number.parseInt(cursor, 10) : NaN;
            if (!Number.isInteger(offset)) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `invalid cursor '${cursor}'`);
        }
        const slice = items.slice(offset, offset + env.pageSize);
        const next = offset + env.pageSize < items.length ? String(offset + env.pageSize) : undefined;
        return next === undefined ? { items: slice } : { items: slice, nextCursor: next };
    }
    const withCursor = p => (p.nextCursor ? { nextCursor: p.nextCursor } : {});
    server.setRequestHandler('tools/list', req => {
        const p = page(model.list('tools'), req.params?.cursor);
        return {
            tools: p.items.map(t => ({ name: t.name, description: t.description, inputSchema: { type: 'object', properties: {} } })),
            ...withCursor(p)
        };
    });
    server.setRequestHandler('tools/call', async req => {
        const name = req.params.name;
        const present = model.items.tools.has(name);
        control.event('dispatched', { tool: name, present });
        if (!present) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
        const description = model.items.tools.get(name);
        await gates.pass(name);
        control.event('call_done', { tool: name });
        return textResult(`${name}:${description}`);
    });
    server.setRequestHandler('prompts/list', req => {
        const p = page(model.list('prompts'), req.params?.cursor);
        return { prompts: p.items, ...withCursor(p) };
    });
    server.setRequestHandler('prompts/get', req => {
        const name = req.params.name;
        if (!model.items.prompts.has(name)) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown prompt: ${name}`);
        return { messages: [{ role: 'user', content: { type: 'text', text: `${name}:${model.items.prompts.get(name)}` } }] };
    });
    server.setRequestHandler('resources/list', req => {
        const p = page(model.list('resources'), req.params?.cursor);
        return { resources: p.items.map(r => ({ uri: r.name, name: r.name, description: r.description, mimeType: 'text/plain' })), ...withCursor(p) };
    });
    server.setRequestHandler('resources/templates/list', req => {
        const p = page(model.list('resource_templates'), req.params?.cursor);
        return { resourceTemplates: p.items.map(r => ({ uriTemplate: r.name, name: r.name, description: r.description })), ...withCursor(p) };
    });
    server.setRequestHandler('resources/read', req => {
        const uri = req.params.uri;
        if (!model.items.resources.has(uri)) throw new ResourceNotFoundError(uri);
        return { contents: [{ uri, mimeType: 'text/plain', text: model.content(uri) }] };
    });
    if (era === 'legacy') {
        // 2025-era resources/subscribe (2026-07-28 has subscriptions/listen, served by serveStdio itself).
        server.setRequestHandler('resources/subscribe', req => {
            subscribed.add(req.params.uri);
            return {};
        });
        server.setRequestHandler('resources/unsubscribe', req => {
            subscribed.delete(req.params.uri);
            return {};
        });
    }
    async function sendListChanged(kind) {
        if (kind === 'tools') await server.sendToolListChanged();
        else if (kind === 'prompts') await server.sendPromptListChanged();
        else await server.sendResourceListChanged();
    }
    return {
        instance: server,
        era,
        applyOps() {},
        async afterBatch(ops) {
            if (!server.transport) return;
            const seen = new Set();
            for (const op of ops) {
                if (op.op === 'set_content' || seen.has(LIST_CHANGED[op.kind])) continue;
                seen.add(LIST_CHANGED[op.kind]);
                await sendListChanged(op.kind);
            }
            for (const op of ops) {
                if (op.op === 'set_content' && (era === 'modern' || subscribed.has(op.uri))) await server.sendResourceUpdated({ uri: op.uri });
            }
        },
        async notify(cmd) {
            if (cmd.kind === 'resource_updated') {
                if (typeof cmd.uri !== 'string') throw new Error('notify resource_updated needs uri');
                await server.sendResourceUpdated({ uri: cmd.uri });
            } else if (KINDS.includes(cmd.kind)) await sendListChanged(cmd.kind);
            else throw new Error(`unknown kind '${cmd.kind}'`);
            return {};
        },
        catalog: kind => model.list(kind)
    };
}
