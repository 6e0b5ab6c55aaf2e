// Entry point of the ts-v2 adapter (@modelcontextprotocol/client + /server v2): LISTSYNC_ROLE selects the role.
import { main } from '../js-common/main.mjs';
import { runServer } from './server.mjs';
import { runClient } from './client.mjs';

const role = process.env.LISTSYNC_ROLE ?? 'server';
await main({
    dirUrl: new URL('./', import.meta.url),
    sdkPackage: role === 'client' ? '@modelcontextprotocol/client' : '@modelcontextprotocol/server',
    runServer,
    runClient
});
