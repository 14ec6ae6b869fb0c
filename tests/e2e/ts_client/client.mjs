// Drives an MCP server over stdio with the official TypeScript SDK client, from a JSON script on stdin.
//
//   node client.mjs NODE_MODULES_DIR < script.json
//
// script: {"command": [argv...], "env": {...}, "cwd": "...",
//          "elicitation": "accept" | "decline" | "cancel" | "none", "elicitation_content": {...}?,
//          "steps": [{"tool", "arguments", "progress": bool?, "cancel_after_ms": N?, "timeout_ms": N?,
//                     "elicitation": "accept" | "decline" | "cancel"?}]}
//   "none" declares no elicitation capability; "accept" answers with elicitation_content, by default
//   with every boolean of the requested form set to true (see yes()). A step's own "elicitation" is
//   how the user answers during that step (the client must not be "none").
// prints: {"sdkVersion", "latestProtocolVersion", "supportedProtocolVersions", "protocolVersion",
//          "serverInfo", "tools": [names], "outputSchemaTools": [names],
//          "results": [{"result": CallToolResult | null, "error": message | null,
//                       "progress": [{progress, total?, message?}], "elicitations": [messages], "elapsed_ms"}]}
// or {"fatal": message} with exit code 1.
//
// The SDK is imported by absolute file URL from NODE_MODULES_DIR (the Makefile's pinned .cache/npm install):
// ESM resolution ignores NODE_PATH, and a file URL needs no symlink next to this file. Its own imports
// (zod, ajv, ...) then resolve from the SDK's real location, inside that same node_modules.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const sdkRoot = join(process.argv[2] ?? '', '@modelcontextprotocol', 'sdk');
const sdk = async (path) => import(pathToFileURL(join(sdkRoot, 'dist', 'esm', path)).href);

async function main() {
    const { Client } = await sdk('client/index.js');
    const { StdioClientTransport } = await sdk('client/stdio.js');
    const { ElicitRequestSchema, LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } = await sdk('types.js');
    const sdkVersion = JSON.parse(readFileSync(join(sdkRoot, 'package.json'), 'utf8')).version;

    const script = JSON.parse(readFileSync(0, 'utf8'));
    const [command, ...args] = script.command;
    const mode = script.elicitation ?? 'none';
    const capabilities = mode === 'none' ? {} : { elicitation: { form: {} } };
    const client = new Client({ name: 'ts-client-harness', version: sdkVersion }, { capabilities });

    const results = [];
    let current = null; // the step running now: elicitations are recorded on it
    if (mode !== 'none') {
        client.setRequestHandler(ElicitRequestSchema, async (request) => {
            const { message, requestedSchema } = request.params;
            (current?.elicitations ?? []).push(message); // (none is expected outside a step)
            const answer = current?.answer ?? mode;
            if (answer !== 'accept') return { action: answer };
            return { action: 'accept', content: script.elicitation_content ?? yes(requestedSchema) };
        });
    }

    // stderr 'inherit': the server's log goes to ours, which the Python helper shows when a test fails.
    const { env, cwd } = script;
    const transport = new StdioClientTransport({ command, args, env, cwd, stderr: 'inherit' });
    // The client hands the negotiated version only to transports that define this hook (HTTP ones do).
    let protocolVersion = null;
    transport.setProtocolVersion = (version) => { protocolVersion = version; };
    await client.connect(transport);

    try {
        // listTools also makes the SDK cache each tool's outputSchema validator: from then on callTool
        // rejects a structuredContent that does not match with "...does not match the tool's output schema".
        const { tools } = await client.listTools();
        for (const step of script.steps ?? []) {
            current = { result: null, error: null, progress: [], elicitations: [], elapsed_ms: 0 };
            results.push(current);
            Object.defineProperty(current, 'answer', { value: step.elicitation, enumerable: false });
            const options = { timeout: step.timeout_ms ?? 120_000 };
            if (step.progress) {
                // Giving onprogress makes the SDK send a progressToken in _meta.
                const seen = current.progress;
                options.onprogress = ({ progress, total, message }) => seen.push({ progress, total, message });
            }
            let timer;
            if (step.cancel_after_ms !== undefined) {
                // Aborting sends notifications/cancelled and rejects the call at once (the SDK drops
                // any response that comes later).
                const controller = new AbortController();
                options.signal = controller.signal;
                const reason = `aborted by the script after ${step.cancel_after_ms} ms`;
                timer = setTimeout(() => controller.abort(reason), step.cancel_after_ms);
            }
            const started = performance.now();
            try {
                const params = { name: step.tool, arguments: step.arguments ?? {} };
                current.result = await client.callTool(params, undefined, options);
            } catch (error) {
                current.error = error instanceof Error ? error.message : String(error);
            } finally {
                clearTimeout(timer);
                current.elapsed_ms = Math.round(performance.now() - started);
            }
        }
        current = null;
        const names = (list) => list.map((tool) => tool.name);
        return {
            sdkVersion,
            latestProtocolVersion: LATEST_PROTOCOL_VERSION, // what the client asks for
            supportedProtocolVersions: SUPPORTED_PROTOCOL_VERSIONS, // what it accepts in the answer
            protocolVersion, // what the server answered
            serverInfo: client.getServerVersion() ?? null,
            tools: names(tools),
            outputSchemaTools: names(tools.filter((tool) => tool.outputSchema)), // the ones callTool validates
            results,
        };
    } finally {
        await client.close(); // ends the server's stdin, then SIGTERM/SIGKILL after 2 s each
    }
}

// What "accept" answers by default: every boolean the form asks for is ticked, others take their default.
function yes(schema) {
    const content = {};
    for (const [key, property] of Object.entries(schema?.properties ?? {})) {
        if (property.type === 'boolean') content[key] = true;
        else if (property.default !== undefined) content[key] = property.default;
    }
    return content;
}

// Exit once stdout is flushed: the SDK may leave timers or handles that would keep node alive.
const finish = (report, code) => process.stdout.write(JSON.stringify(report) + '\n', () => process.exit(code));
try {
    finish(await main(), 0);
} catch (error) {
    finish({ fatal: error instanceof Error ? error.stack ?? error.message : String(error) }, 1);
}
