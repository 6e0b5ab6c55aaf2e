// Entry point of the ts-v1 adapter (@modelcontextprotocol/sdk v1): LISTSYNC_ROLE selects server or client.
import { main } from '../js-common/main.mjs';
import { runServer } from './server.mjs';
import { runClient } from './client.mjs';

await main({ dirUrl: new URL('./', import.meta.url), sdkPackage: '@modelcontextprotocol/sdk', runServer, runClient });
