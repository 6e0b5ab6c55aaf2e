// listsync client adapter for the TypeScript MCP SDK v1 (@modelcontextprotocol/sdk): a `Client` with the
// `listChanged` option (autoRefresh; debounceMs from LISTSYNC_DEBOUNCE_MS, else the SDK default), speaking MCP
// over its own stdin/stdout through the SDK's stdio transport class. onChanged(err, items) -> `published`.
// The SDK's auto-refresh is used as is (v1 fetches the first page only); the initial list and the
// `refresh` command walk cursors with listTools({cursor}), as an application would by hand.
import process from 'node:process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { toItem } from '../js-common/control.mjs';

const LIST = {
    tools: { method: 'listTools', field: 'tools', cap: 'tools' },
    prompts: { method: 'listPrompts', field: 'prompts', cap: 'prompts' },
    resources: { method: 'listResources', field: 'resources', cap: 'resources' },
    resource_templates: { method: 'listResourceTemplates', field: 'resourceTemplates', cap: 'resources' }
};

export async function runClient({ control, env, sdk }) {
    const variant = env.variant ?? 'listchanged';
    if (variant !== 'listchanged') throw new Error(`unknown LISTSYNC_VARIANT '${variant}' (listchanged)`);
    const snapshots = { tools: null, prompts: null, resources: null, resource_templates: null };

    function publish(kind, items, source) {
        snapshots[kind] = items.map(i => toItem(kind, i));
        control.event('published', { kind, items: snapshots[kind], source });
    }
    const listChangedOpt = kind => {
        const o = {
            autoRefresh: true,
            onChanged: (err, items) => {
                if (err) {
                    control.event('refresh_failed', { kind, error: err.message });
                    return;
                }
                if (items) publish(kind, items, 'onChanged');
            }
        };
        if (env.debounceMs !== undefined) o.debounceMs = env.debounceMs;
        return o;
    };
    const client = new Client(
        { name: 'listsync-ts-v1-client', version: '0.1.0' },
        { listChanged: { tools: listChangedOpt('tools'), prompts: listChangedOpt('prompts'), resources: listChangedOpt('resources') } }
    );
    // The SDK's auto-refresh calls this.listTools() etc.: wrapping the instance methods reports when a
    // re-list starts, whoever started it. Behaviour is unchanged.
    for (const [kind, spec] of Object.entries(LIST)) {
        const orig = client[spec.method].bind(client);
        client[spec.method] = (...args) => {
            if (!args[0]?.cursor) control.event('refresh_started', { kind });
            return orig(...args);
        };
    }

    const transport = new StdioServerTransport(process.stdin, process.stdout);
    let negotiated;
    transport.setProtocolVersion = v => {
        negotiated = v;
    };

    async function listAll(kind) {
        const spec = LIST[kind];
        let cursor;
        const items = [];
        let pages = 0;
        do {
            const res = await client[spec.method](cursor === undefined ? undefined : { cursor });
            items.push(...res[spec.field]);
            cursor = res.nextCursor;
            pages++;
        } while (cursor !== undefined);
        return { items, pages };
    }

    control.on('snapshot', async cmd => {
        if (!(cmd.kind in snapshots)) throw new Error(`unknown kind '${cmd.kind}'`);
        return { items: snapshots[cmd.kind] };
    });
    control.on('refresh', async cmd => {
        if (!(cmd.kind in snapshots)) throw new Error(`unknown kind '${cmd.kind}'`);
        const { items, pages } = await listAll(cmd.kind);
        publish(cmd.kind, items, 'refresh');
        return { items: snapshots[cmd.kind], pages };
    });
    control.on('call', async cmd => {
        if (typeof cmd.tool !== 'string') throw new Error('call needs tool');
        try {
            const res = await client.callTool({ name: cmd.tool, arguments: cmd.arguments ?? {} });
            const text = (res.content ?? []).filter(c => c.type === 'text').map(c => c.text).join('');
            control.event('call_done', { tool: cmd.tool, is_error: !!res.isError });
            return { is_error: !!res.isError, text };
        } catch (e) {
            control.event('call_done', { tool: cmd.tool, is_error: true, code: e?.code ?? null });
            throw rpcError(e);
        }
    });
    control.on('subscribe', async cmd => {
        if (typeof cmd.uri !== 'string') throw new Error('subscribe needs uri');
        try {
            await client.subscribeResource({ uri: cmd.uri });
        } catch (e) {
            throw rpcError(e);
        }
        return {};
    });
    control.on('listen', async () => {
        throw new Error('ts-v1 has no subscriptions/listen (protocol 2026-07-28 is not implemented by @modelcontextprotocol/sdk v1)');
    });
    control.on('shutdown', async () => ({}));
    control.onShutdown = () => client.close();

    if (env.era !== '2025-11-25') {
        control.event('log', { message: `ts-v1 cannot pin ${env.era}: it always offers 2025-11-25 in initialize` });
    }
    await client.connect(transport);
    // Observe (never alter) notifications as the transport delivers them to the SDK's handlers.
    const onmessage = transport.onmessage;
    transport.onmessage = (msg, extra) => {
        if (msg && msg.method && msg.id === undefined) control.event('notification', { method: msg.method, params: msg.params ?? null });
        onmessage?.(msg, extra);
    };
    control.event('negotiated', { protocol_version: negotiated ?? null });
    control.event('ready', {
        impl: 'ts-v1',
        role: 'client',
        sdk: '@modelcontextprotocol/sdk',
        sdk_version: sdk.version,
        era_requested: env.era,
        variant,
        debounce_ms: env.debounceMs ?? null,
        server_capabilities: client.getServerCapabilities() ?? null
    });
    // Initial lists, the documented way (all pages), for each kind the server offers.
    const caps = client.getServerCapabilities() ?? {};
    for (const [kind, spec] of Object.entries(LIST)) {
        if (!caps[spec.cap]) continue;
        try {
            const { items, pages } = await listAll(kind);
            publish(kind, items, 'initial');
            if (pages > 1) control.event('log', { message: `initial ${kind} list took ${pages} pages` });
        } catch (e) {
            control.event('refresh_failed', { kind, error: e?.message ?? String(e) });
        }
    }
}

function rpcError(e) {
    const err = new Error(e?.message ?? String(e));
    if (e instanceof McpError || typeof e?.code === 'number') err.replyFields = { code: e.code };
    return err;
}
