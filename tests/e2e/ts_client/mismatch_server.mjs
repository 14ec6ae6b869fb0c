// A stdio MCP server whose one tool breaks its own outputSchema: `lie` declares {"ok": boolean} and
// returns {"ok": "yes"}. It shows that the harness reports such a result as an error, not as a result.
//
//   node mismatch_server.mjs NODE_MODULES_DIR
//
// The low-level Server, not McpServer: McpServer would check the result itself before sending it.

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const sdkRoot = join(process.argv[2] ?? '', '@modelcontextprotocol', 'sdk');
const sdk = async (path) => import(pathToFileURL(join(sdkRoot, 'dist', 'esm', path)).href);

const { Server } = await sdk('server/index.js');
const { StdioServerTransport } = await sdk('server/stdio.js');
const { CallToolRequestSchema, ListToolsRequestSchema } = await sdk('types.js');

const server = new Server({ name: 'mismatch', version: '1.0.0' }, { capabilities: { tools: {} } });
const outputSchema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] };
server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [{ name: 'lie', inputSchema: { type: 'object' }, outputSchema }],
}));
server.setRequestHandler(CallToolRequestSchema, async () => ({
    content: [{ type: 'text', text: '{"ok": "yes"}' }],
    structuredContent: { ok: 'yes' },
}));
await server.connect(new StdioServerTransport());
