// listsync server adapter for the TypeScript MCP SDK v1 (@modelcontextprotocol/sdk).
// Variants: `mcpserver` (McpServer + register*/RegisteredX.update/remove; notifications exactly as the
// SDK sends them by itself), `mcpserver-coalesced` (same, with the SDK's own
// `debouncedNotificationMethods` option), `lowlevel` (low-level Server, hand-written offset-cursor
// pagination, one send*ListChanged() per touched kind after each mutate batch).
import process from 'node:process';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
    CallToolRequestSchema,
    ErrorCode,
    GetPromptRequestSchema,
    ListPromptsRequestSchema,
    ListResourcesRequestSchema,
    ListResourceTemplatesRequestSchema,
    ListToolsRequestSchema,
    McpError,
    ReadResourceRequestSchema,
    SubscribeRequestSchema,
    UnsubscribeRequestSchema
} from '@modelcontextprotocol/sdk/types.js';
import { CatalogModel, Gates, KINDS, log } from '../js-common/control.mjs';

const SERVER_INFO = { name: 'listsync-ts-v1-server', version: '0.1.0' };
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
    if (env.era !== '2025-11-25') {
        control.event('log', { message: `ts-v1 knows no protocol version newer than 2025-11-25; era ${env.era} requested, the client's initialize decides` });
    }
    const gates = new Gates(control);
    const model = new CatalogModel();
    const impl = variant === 'lowlevel' ? lowLevel(control, env, gates, model) : highLevel(control, env, gates, model, variant);

    // Initial catalog, before the transport starts (no notifications can leave: not connected).
    model.clone().apply(env.initial); // validate first
    impl.applyOps(env.initial);
    model.apply(env.initial);

    control.on('mutate', async cmd => {
        if (!Array.isArray(cmd.ops)) throw new Error('mutate needs ops: [...]');
        model.clone().apply(cmd.ops); // rejects the whole batch before the SDK sees any op
        impl.applyOps(cmd.ops);
        model.apply(cmd.ops);
        await impl.afterBatch(cmd.ops);
        return {};
    });
    control.on('notify', async cmd => impl.notify(cmd));
    control.on('catalog', async cmd => {
        if (!KINDS.includes(cmd.kind)) throw new Error(`unknown kind '${cmd.kind}'`);
        return { items: impl.catalog(cmd.kind) };
    });
    control.on('gate_call', async cmd => ({ gate: gates.arm(cmd.tool) }));
    control.on('release', async cmd => {
        gates.release(cmd.gate);
        return {};
    });
    control.on('shutdown', async () => ({}));

    const transport = new StdioServerTransport(process.stdin, process.stdout);
    // Observe (never alter) what the SDK hands its transport, to report `notified`.
    const send = transport.send.bind(transport);
    transport.send = message => {
        if (message && message.method && message.method.startsWith('notifications/') && message.id === undefined) {
            control.event('notified', { method: message.method, params: message.params ?? null });
        }
        return send(message);
    };
    control.onShutdown = () => impl.close();
    await impl.connect(transport);
    control.event('ready', {
        impl: 'ts-v1',
        role: 'server',
        sdk: '@modelcontextprotocol/sdk',
        sdk_version: sdk.version,
        era_requested: env.era,
        variant,
        page_size: env.pageSize
    });
}

function textResult(text) {
    return { content: [{ type: 'text', text }] };
}

/** McpServer: the SDK's registry is the truth; each register/update/remove notifies as the SDK does. */
function highLevel(control, env, gates, model, variant) {
    const options = {
        // Declared up front: the SDK's documented way to allow registering after connect().
        capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true } }
    };
    if (variant === 'mcpserver-coalesced') {
        options.debouncedNotificationMethods = [
            'notifications/tools/list_changed',
            'notifications/prompts/list_changed',
            'notifications/resources/list_changed'
        ];
    }
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
        switch (op.kind) {
            case 'tools':
                h = mcp.registerTool(op.name, { description: d }, toolCb(op.name, d));
                break;
            case 'prompts':
                h = mcp.registerPrompt(op.name, { description: d }, promptCb(op.name, d));
                break;
            case 'resources':
                h = mcp.registerResource(op.name, op.name, { description: d, mimeType: 'text/plain' }, readCb);
                break;
            case 'resource_templates':
                h = mcp.registerResource(op.name, new ResourceTemplate(op.name, { list: undefined }), { description: d }, readCb);
                break;
        }
        handles[op.kind].set(op.name, h);
    }
    function update(op) {
        const h = handles[op.kind].get(op.name);
        const d = op.description ?? '';
        if (op.kind === 'tools') h.update({ description: d, callback: toolCb(op.name, d) });
        else if (op.kind === 'prompts') h.update({ description: d, callback: promptCb(op.name, d) });
        else if (op.kind === 'resources') h.update({ metadata: { description: d, mimeType: 'text/plain' } });
        else h.update({ metadata: { description: d } });
    }
    return {
        applyOps(ops) {
            for (const op of ops) {
                if (op.op === 'add') add(op);
                else if (op.op === 'remove') {
                    handles[op.kind].get(op.name).remove();
                    handles[op.kind].delete(op.name);
                } else if (op.op === 'update') update(op);
                // set_content: the model holds the text the read callback serves; McpServer sends nothing.
            }
        },
        async afterBatch() {},
        async notify(cmd) {
            switch (cmd.kind) {
                case 'tools':
                    mcp.sendToolListChanged();
                    break;
                case 'prompts':
                    mcp.sendPromptListChanged();
                    break;
                case 'resources':
                case 'resource_templates':
                    mcp.sendResourceListChanged();
                    break;
                case 'resource_updated':
                    if (typeof cmd.uri !== 'string') throw new Error('notify resource_updated needs uri');
                    await mcp.server.sendResourceUpdated({ uri: cmd.uri });
                    break;
                default:
                    throw new Error(`unknown kind '${cmd.kind}'`);
            }
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
            return pick(
                mcp._registeredResourceTemplates,
                (k, v) => v.resourceTemplate.uriTemplate.toString(),
                v => v.metadata?.description
            );
        },
        connect: transport => mcp.connect(transport),
        close: () => mcp.close()
    };
}

/** Low-level Server: the adapter's model is the registry; offset cursors; notify after each batch. */
function lowLevel(control, env, gates, model) {
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
            if (!Number.isInteger(offset)) throw new McpError(ErrorCode.InvalidParams, `invalid cursor '${cursor}'`);
        }
        const slice = items.slice(offset, offset + env.pageSize);
        const next = offset + env.pageSize < items.length ? String(offset + env.pageSize) : undefined;
        return next === undefined ? { items: slice } : { items: slice, nextCursor: next };
    }

    server.setRequestHandler(ListToolsRequestSchema, req => {
        const p = page(model.list('tools'), req.params?.cursor);
        return {
            tools: p.items.map(t => ({ name: t.name, description: t.description, inputSchema: { type: 'object', properties: {} } })),
            ...(p.nextCursor && { nextCursor: p.nextCursor })
        };
    });
    server.setRequestHandler(CallToolRequestSchema, async req => {
        const name = req.params.name;
        const present = model.items.tools.has(name);
        control.event('dispatched', { tool: name, present });
        if (!present) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
        const description = model.items.tools.get(name);
        await gates.pass(name);
        control.event('call_done', { tool: name });
        return textResult(`${name}:${description}`);
    });
    server.setRequestHandler(ListPromptsRequestSchema, req => {
        const p = page(model.list('prompts'), req.params?.cursor);
        return { prompts: p.items, ...(p.nextCursor && { nextCursor: p.nextCursor }) };
    });
    server.setRequestHandler(GetPromptRequestSchema, req => {
        const name = req.params.name;
        if (!model.items.prompts.has(name)) throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${name}`);
        return { messages: [{ role: 'user', content: { type: 'text', text: `${name}:${model.items.prompts.get(name)}` } }] };
    });
    server.setRequestHandler(ListResourcesRequestSchema, req => {
        const p = page(model.list('resources'), req.params?.cursor);
        return {
            resources: p.items.map(r => ({ uri: r.name, name: r.name, description: r.description, mimeType: 'text/plain' })),
            ...(p.nextCursor && { nextCursor: p.nextCursor })
        };
    });
    server.setRequestHandler(ListResourceTemplatesRequestSchema, req => {
        const p = page(model.list('resource_templates'), req.params?.cursor);
        return {
            resourceTemplates: p.items.map(r => ({ uriTemplate: r.name, name: r.name, description: r.description })),
            ...(p.nextCursor && { nextCursor: p.nextCursor })
        };
    });
    server.setRequestHandler(ReadResourceRequestSchema, req => {
        const uri = req.params.uri;
        if (!model.items.resources.has(uri)) throw new McpError(-32002, `Resource not found: ${uri}`);
        return { contents: [{ uri, mimeType: 'text/plain', text: model.content(uri) }] };
    });
    server.setRequestHandler(SubscribeRequestSchema, req => {
        subscribed.add(req.params.uri);
        return {};
    });
    server.setRequestHandler(UnsubscribeRequestSchema, req => {
        subscribed.delete(req.params.uri);
        return {};
    });

    async function sendListChanged(kind) {
        if (kind === 'tools') await server.sendToolListChanged();
        else if (kind === 'prompts') await server.sendPromptListChanged();
        else await server.sendResourceListChanged();
    }
    return {
        applyOps() {}, // the model (applied by the caller) is the registry
        async afterBatch(ops) {
            if (!server.transport) return;
            const methods = new Set();
            const kinds = [];
            for (const op of ops) {
                if (op.op === 'set_content') continue;
                if (!methods.has(LIST_CHANGED[op.kind])) {
                    methods.add(LIST_CHANGED[op.kind]);
                    kinds.push(op.kind);
                }
            }
            for (const kind of kinds) await sendListChanged(kind);
            for (const op of ops) {
                if (op.op === 'set_content' && subscribed.has(op.uri)) await server.sendResourceUpdated({ uri: op.uri });
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
        catalog: kind => model.list(kind),
        connect: transport => server.connect(transport),
        close: () => server.close()
    };
}

export { log };
