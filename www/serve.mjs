// Serves the demo site on 127.0.0.1 (PORT, default 8080) and prints its URL.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStaticServer } from '../tests/js/static-server.mjs';

const dir = process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), 'dist/site');
const port = Number(process.env.PORT ?? 8080);
const server = await startStaticServer(dir, { port });
console.log(`sextant demo: ${server.url}/  (Ctrl-C to stop)`);
