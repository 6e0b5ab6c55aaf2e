// Control-channel plumbing shared by the Node adapters (ts-v1, ts-v2): connects to the harness's
// Unix socket (LISTSYNC_CONTROL), frames JSON lines, routes commands to handlers, sends replies and
// events, validates mutate ops, and owns process exit. No SDK imports here: each adapter brings its SDK.
import net from 'node:net';
import process from 'node:process';

export const KINDS = ['tools', 'prompts', 'resources', 'resource_templates'];

/** Logs to stderr only: stdout is the MCP channel. */
export function log(...args) {
    const text = args.map(a => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ');
    process.stderr.write(`[listsync-adapter ${process.env.LISTSYNC_ROLE ?? '?'}] ${text}\n`);
}

/** Reads the LISTSYNC_* environment into one object, with defaults. */
export function readEnv() {
    const env = process.env;
    let initial = [];
    if (env.LISTSYNC_INITIAL) {
        initial = JSON.parse(env.LISTSYNC_INITIAL);
        if (!Array.isArray(initial)) throw new Error('LISTSYNC_INITIAL must be a JSON array of ops');
    }
    const debounce = env.LISTSYNC_DEBOUNCE_MS;
    return {
        control: env.LISTSYNC_CONTROL,
        role: env.LISTSYNC_ROLE ?? 'server',
        era: env.LISTSYNC_ERA ?? '2025-11-25',
        pageSize: Number.parseInt(env.LISTSYNC_PAGE_SIZE ?? '0', 10) || 0,
        initial,
        variant: env.LISTSYNC_VARIANT,
        debounceMs: debounce === undefined || debounce === '' ? undefined : Number.parseInt(debounce, 10)
    };
}

/** Checks one mutate op's shape; returns an error string or null. Does not check registry state. */
export function checkOp(op) {
    if (op === null || typeof op !== 'object') return 'op must be an object';
    switch (op.op) {
        case 'add':
        case 'update':
            if (!KINDS.includes(op.kind)) return `unknown kind '${op.kind}'`;
            if (typeof op.name !== 'string' || op.name === '') return 'op.name must be a non-empty string';
            if (op.description !== undefined && typeof op.description !== 'string') return 'op.description must be a string';
            return null;
        case 'remove':
            if (!KINDS.includes(op.kind)) return `unknown kind '${op.kind}'`;
            if (typeof op.name !== 'string' || op.name === '') return 'op.name must be a non-empty string';
            return null;
        case 'set_content':
            if (typeof op.uri !== 'string' || op.uri === '') return 'op.uri must be a non-empty string';
            if (typeof op.text !== 'string') return 'op.text must be a string';
            return null;
        default:
            return `unknown op '${op?.op}'`;
    }
}

/**
 * A pure model of the catalog, used (a) to validate a batch before the SDK sees any of it (a batch that
 * would fail is rejected whole with ok:false, nothing applied) and (b) as the registry itself for the
 * low-level variants, where the adapter's handlers are the registry. Keeps insertion order.
 */
export class CatalogModel {
    constructor() {
        this.items = Object.fromEntries(KINDS.map(k => [k, new Map()]));
        this.contents = new Map();
    }
    clone() {
        const c = new CatalogModel();
        for (const k of KINDS) c.items[k] = new Map(this.items[k]);
        c.contents = new Map(this.contents);
        return c;
    }
    /** Applies ops; throws Error on the first op that does not fit the current state. */
    apply(ops) {
        for (const op of ops) {
            const err = checkOp(op);
            if (err) throw new Error(err);
            if (op.op === 'set_content') {
                this.contents.set(op.uri, op.text);
                continue;
            }
            const m = this.items[op.kind];
            if (op.op === 'add') {
                if (m.has(op.name)) throw new Error(`${op.kind} '${op.name}' already exists`);
                m.set(op.name, op.description ?? '');
            } else if (op.op === 'remove') {
                if (!m.has(op.name)) throw new Error(`${op.kind} '${op.name}' does not exist`);
                m.delete(op.name);
            } else {
                if (!m.has(op.name)) throw new Error(`${op.kind} '${op.name}' does not exist`);
                m.set(op.name, op.description ?? '');
            }
        }
    }
    list(kind) {
        return [...this.items[kind].entries()].map(([name, description]) => ({ name, description }));
    }
    content(uri) {
        return this.contents.get(uri) ?? '';
    }
}

/** Error carrying a JSON-RPC style reply for a command (ok:false). */
export class CommandError extends Error {}

/**
 * The control channel. `handlers` maps command name to async (cmd) => extra reply fields.
 * Throwing (anything) from a handler yields {ok:false,error}. Events sent before the socket is
 * connected are queued. The process exits when the socket closes or on shutdown.
 */
export class Control {
    constructor(path) {
        this.path = path;
        this.handlers = new Map();
        this.queue = [];
        this.socket = undefined;
        this.closing = false;
        this.onShutdown = async () => {};
    }
    on(name, handler) {
        this.handlers.set(name, handler);
    }
    connect() {
        if (!this.path) throw new Error('LISTSYNC_CONTROL is not set (path of the harness control socket)');
        return new Promise((resolve, reject) => {
            const sock = net.createConnection({ path: this.path });
            sock.setEncoding('utf8');
            let buf = '';
            sock.once('connect', () => {
                this.socket = sock;
                for (const line of this.queue) sock.write(line);
                this.queue = [];
                resolve();
            });
            sock.once('error', err => {
                if (!this.socket) reject(err);
                else log('control socket error:', err.message);
            });
            sock.on('data', chunk => {
                buf += chunk;
                let i;
                while ((i = buf.indexOf('\n')) >= 0) {
                    const line = buf.slice(0, i).replace(/\r$/, '');
                    buf = buf.slice(i + 1);
                    if (line.trim() !== '') this.handleLine(line);
                }
            });
            sock.on('close', () => {
                if (this.socket) this.exit(0, 'control socket closed');
            });
        });
    }
    write(obj) {
        const line = JSON.stringify(obj) + '\n';
        if (this.socket && !this.socket.destroyed) this.socket.write(line);
        else if (!this.socket) this.queue.push(line);
    }
    event(name, fields = {}) {
        this.write({ type: 'event', event: name, ...fields });
    }
    reply(id, ok, fields = {}) {
        this.write({ type: 'reply', id, ok, ...fields });
    }
    handleLine(line) {
        let msg;
        try {
            msg = JSON.parse(line);
        } catch (e) {
            this.reply(null, false, { error: `invalid JSON: ${e.message}` });
            return;
        }
        const id = msg && typeof msg === 'object' && 'id' in msg ? msg.id : null;
        if (!msg || typeof msg !== 'object' || msg.type !== 'cmd' || typeof msg.cmd !== 'string') {
            this.reply(id, false, { error: 'expected {"type":"cmd","id":N,"cmd":"..."}' });
            return;
        }
        const handler = this.handlers.get(msg.cmd);
        if (!handler) {
            this.reply(id, false, { error: `unknown command '${msg.cmd}'` });
            return;
        }
        // Commands run concurrently (a parked call must not block a release); each gets exactly one reply.
        Promise.resolve()
            .then(() => handler(msg))
            .then(
                extra => {
                    this.reply(id, true, extra ?? {});
                    if (msg.cmd === 'shutdown') this.exit(0, 'shutdown command');
                },
                err => {
                    const fields = { error: err instanceof Error ? err.message : String(err) };
                    if (err && typeof err === 'object' && 'replyFields' in err) Object.assign(fields, err.replyFields);
                    this.reply(id, false, fields);
                }
            );
    }
    /** Flushes the socket, runs the shutdown hook, exits. Idempotent. */
    exit(code, reason) {
        if (this.closing) return;
        this.closing = true;
        log('exiting:', reason);
        const done = () => process.exit(code);
        Promise.resolve()
            .then(() => this.onShutdown())
            .catch(() => {})
            .finally(() => {
                if (this.socket && !this.socket.destroyed) this.socket.end(done);
                else done();
                // Never hang on a peer that does not read: end() callback normally fires at once.
                setTimeout(done, 2000).unref();
            });
    }
}

/** Common process wiring: stdin EOF ends the adapter, uncaught errors are logged and end it with code 1. */
export function wireProcess(control) {
    process.stdin.on('end', () => control.exit(0, 'stdin reached EOF'));
    process.on('uncaughtException', err => {
        log('uncaught exception:', err?.stack ?? String(err));
        control.event('log', { message: `uncaught exception: ${err?.message ?? String(err)}` });
        control.exit(1, 'uncaught exception');
    });
    process.on('unhandledRejection', err => {
        // An SDK promise rejected with nobody listening: report, keep running (SDK behaviour, not ours).
        log('unhandled rejection:', err?.stack ?? String(err));
        control.event('log', { message: `unhandled rejection: ${err?.message ?? String(err)}` });
    });
}

/** Gate bookkeeping for server adapters: gate_call arms a gate, the tool handler waits on it. */
export class Gates {
    constructor(control) {
        this.control = control;
        this.next = 1;
        this.armed = new Map(); // tool -> [gateId]
        this.parked = new Map(); // gateId -> resolve
        this.released = new Set(); // released before parking
    }
    arm(tool) {
        if (typeof tool !== 'string' || tool === '') throw new Error('gate_call needs a tool name');
        const gate = this.next++;
        if (!this.armed.has(tool)) this.armed.set(tool, []);
        this.armed.get(tool).push(gate);
        return gate;
    }
    release(gate) {
        const resolve = this.parked.get(gate);
        if (resolve) {
            this.parked.delete(gate);
            resolve();
            return;
        }
        for (const q of this.armed.values()) {
            if (q.includes(gate)) {
                this.released.add(gate);
                return;
            }
        }
        throw new Error(`unknown gate ${gate}`);
    }
    /** Called by a tool handler after dispatch: parks if a gate is armed for this tool. */
    async pass(tool) {
        const q = this.armed.get(tool);
        if (!q || q.length === 0) return;
        const gate = q.shift();
        this.control.event('call_parked', { tool, gate });
        if (this.released.delete(gate)) return;
        await new Promise(resolve => this.parked.set(gate, resolve));
    }
}

/** Maps an SDK list item to the {name, description} the control protocol uses. */
export function toItem(kind, item) {
    if (kind === 'resources') return { name: item.uri, description: item.description ?? '' };
    if (kind === 'resource_templates') return { name: item.uriTemplate, description: item.description ?? '' };
    return { name: item.name, description: item.description ?? '' };
}
