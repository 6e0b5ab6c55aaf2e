// listsync client adapter for the TypeScript MCP SDK v2 (@modelcontextprotocol/client): a `Client` with the
// `listChanged` option (autoRefresh; debounceMs from LISTSYNC_DEBOUNCE_MS, else the SDK default) over its own
// stdin/stdout through the SDK's stdio transport class (StdioServerTransport, which is direction-agnostic).
// Era: LISTSYNC_ERA=2025-11-25 -> versionNegotiation 'legacy' (initialize); 2026-07-28 -> { pin } (server/discover,
// and the SDK auto-opens a subscriptions/listen stream for the listChanged kinds). v2 list*() walks all pages.
import process from 'node:process';
import { Client } from '@modelcontextprotocol/client';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { toItem } from '../js-common/control.mjs';

const LIST = {
    tools: { method: 'listTools', field: 'tools', cap: 'tools', wire: 'tools/list' },
    prompts: { method: 'listPrompts', field: 'prompts', cap: 'prompts', wire: 'prompts/list' },
    resources: { method: 'listResources', field: 'resources', cap: 'resources', wire: 'resources/list' },
    resource_templates: { method: 'listResourceTemplates', field: 'resourceTemplates', cap: 'resources', wire: 'resources/templates/list' }
};
const FILTER_KEYS = { tools: 'toolsListChanged', prompts: 'promptsListChanged', resources: 'resourcesListChanged' };

export async function runClient({ control, env, sdk }) {
    const variant = env.variant ?? 'listchanged';
    if (variant !== 'listchanged') throw new Error(`unknown LISTSYNC_VARIANT '${variant}' (listchanged)`);
    const snapshots = { tools: null, prompts: null, resources: null, resource_templates: null };
    const pageCount = { tools: 0, prompts: 0, resources: 0, resource_templates: 0 };

    function publish(kind, items, source) {
        snapshots[kind] = items.map(i => toItem(kind, i));
        control.event('published', { kind, items: snapshots[kind], source });
    }
    const listChangedOpt = kind => {
        const o = {
            autoRefresh: true,
            onChanged: (err, items) => {
                if (err) control.event('refresh_failed', { kind, error: err.message });
                else if (items) publish(kind, items, 'onChanged');
            }
        };
        if (env.debounceMs !== undefined) o.debounceMs = env.debounceMs;
        return o;
    };
    const options = {
        listChanged: { tools: listChangedOpt('tools'), prompts: listChangedOpt('prompts'), resources: listChangedOpt('resources') },
        versionNegotiation: { mode: env.era === '2025-11-25' ? 'legacy' : { pin: env.era } }
    };
    const client = new Client({ name: 'listsync-ts-v2-client', version: '0.1.0' }, options);
    for (const [kind, spec] of Object.entries(LIST)) {
        const orig = client[spec.method].bind(client);
        client[spec.method] = (...args) => {
            if (!args[0]?.cursor) control.event('refresh_started', { kind });
            return orig(...args);
        };
    }

    const transport = new StdioServerTransport(process.stdin, process.stdout);
    const send = transport.send.bind(transport);
    transport.send = (message, opts) => {
        for (const [kind, spec] of Object.entries(LIST)) if (message?.method === spec.wire && message.id !== undefined) pageCount[kind]++;
        return send(message, opts);
    };

    async function listAll(kind) {
        const spec = LIST[kind];
        const before = pageCount[kind];
        const res = await client[spec.method](); // no cursor: the SDK walks every page
        return { items: res[spec.field], pages: pageCount[kind] - before };
    }
    const subscriptions = [];

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
    control.on('listen', async cmd => {
        const kinds = Array.isArray(cmd.kinds) ? cmd.kinds : [];
        const filter = {};
        for (const k of kinds) {
            if (FILTER_KEYS[k]) filter[FILTER_KEYS[k]] = true;
            else throw new Error(`unknown kind '${k}' for listen`);
        }
        if (Array.isArray(cmd.uris)) filter.resourceSubscriptions = cmd.uris;
        let sub;
        try {
            sub = await client.listen(filter);
        } catch (e) {
            throw rpcError(e);
        }
        subscriptions.push(sub);
        sub.closed.then(how => control.event('log', { message: `subscription closed: ${how}` }));
        return { honored: sub.honoredFilter };
    });
    control.on('shutdown', async () => ({}));
    control.onShutdown = () => client.close();

    await client.connect(transport);
    const onmessage = transport.onmessage;
    transport.onmessage = (msg, extra) => {
        if (msg && msg.method && msg.id === undefined) control.event('notification', { method: msg.method, params: msg.params ?? null });
        onmessage?.(msg, extra);
    };
    control.event('negotiated', { protocol_version: client.getNegotiatedProtocolVersion() ?? null, era: client.getProtocolEra() ?? null });
    control.event('ready', {
        impl: 'ts-v2',
        role: 'client',
        sdk: '@modelcontextprotocol/client',
        sdk_version: sdk.version,
        era_requested: env.era,
        variant,
        debounce_ms: env.debounceMs ?? null,
        server_capabilities: client.getServerCapabilities() ?? null,
        auto_listen: client.autoOpenedSubscription ? client.autoOpenedSubscription.honoredFilter : null
    });
    const caps = client.getServerCapabilities() ?? {};
    for (const [kind, spec] of Object.entries(LIST)) {
        if (!caps[spec.cap]) continue;
        try {
            const { items } = await listAll(kind);
            publish(kind, items, 'initial');
        } catch (e) {
            control.event('refresh_failed', { kind, error: e?.message ?? String(e) });
        }
    }
}

function rpcError(e) {
    const err = new Error(e?.message ?? String(e));
    if (typeof e?.code === 'number') err.replyFields = { code: e.code };
    return err;
}
