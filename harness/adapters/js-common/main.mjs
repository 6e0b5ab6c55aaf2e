// Shared entry-point logic for the Node adapters: reads the LISTSYNC_* environment, connects the control
// socket, reads the installed SDK version from the adapter's own node_modules, and runs the role.
// Any start-up failure is reported as a `log` event (when the socket is up) and exits non-zero.
import fs from 'node:fs';
import { Control, log, readEnv, wireProcess } from './control.mjs';

/** Exact installed version of `pkg`, read from node_modules next to the adapter directory `dirUrl`. */
export function installedVersion(dirUrl, pkg) {
    const url = new URL(`./node_modules/${pkg}/package.json`, dirUrl);
    return JSON.parse(fs.readFileSync(url, 'utf8')).version;
}

export async function main({ dirUrl, sdkPackage, runServer, runClient }) {
    // stdout is the MCP channel: the SDKs' own console output (v2's client calls console.debug,
    // which Node writes to stdout, when a server does not advertise resources) goes to stderr.
    for (const level of ['log', 'info', 'debug']) console[level] = (...args) => console.error(...args);
    let control;
    try {
        const env = readEnv();
        control = new Control(env.control);
        wireProcess(control);
        await control.connect();
        const sdk = { name: sdkPackage, version: installedVersion(dirUrl, sdkPackage) };
        if (env.role === 'server') await runServer({ control, env, sdk });
        else if (env.role === 'client') await runClient({ control, env, sdk });
        else throw new Error(`LISTSYNC_ROLE must be server or client, got '${env.role}'`);
    } catch (e) {
        log('start-up failed:', e?.stack ?? String(e));
        if (control) {
            control.event('log', { message: `start-up failed: ${e?.message ?? String(e)}` });
            control.exit(2, 'start-up failed');
        } else process.exit(2);
    }
}
