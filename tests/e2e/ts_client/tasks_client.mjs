// Drives execute_code as MCP tasks (2025-11-25, the handshake era) with the official TypeScript SDK
// client's experimental tasks API, over stdio, from a JSON script on stdin.
//
//   node tasks_client.mjs NODE_MODULES_DIR < script.json
//
// script: {"command": [argv...], "env": {...}, "cwd": "...", "slow": code, "forever": code,
//          "timeout_ms": N}   (every request's timeout: shorter than the slow snippet takes)
// prints: {"protocolVersion", "tasksCapability", "taskSupport",
//          "slow": {"messages": [{type, status?, statusMessage?}], "result": CallToolResult | null,
//                   "error": message | null},
//          "forever": {"taskId", "working": Task, "listed": [taskIds], "cancelled": Task, "after": Task},
//          "unknown": error message, "resultOfCancelled": error message}
// or {"fatal": message} with exit code 1.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const sdkRoot = join(process.argv[2] ?? '', '@modelcontextprotocol', 'sdk');
const sdk = async (path) => import(pathToFileURL(join(sdkRoot, 'dist', 'esm', path)).href);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
    const { Client } = await sdk('client/index.js');
    const { StdioClientTransport } = await sdk('client/stdio.js');
    const { CallToolResultSchema } = await sdk('types.js');

    const script = JSON.parse(readFileSync(0, 'utf8'));
    const [command, ...args] = script.command;
    const client = new Client({ name: 'ts-tasks-harness', version: '1' }, { capabilities: {} });
    const { env, cwd } = script;
    const transport = new StdioClientTransport({ command, args, env, cwd, stderr: 'inherit' });
    let protocolVersion = null;
    transport.setProtocolVersion = (version) => { protocolVersion = version; };
    await client.connect(transport);
    const options = { timeout: script.timeout_ms };
    const report = { protocolVersion, tasksCapability: client.getServerCapabilities()?.tasks ?? null };

    try {
        const { tools } = await client.listTools();
        report.taskSupport = tools.find((tool) => tool.name === 'execute_code')?.execution?.taskSupport ?? null;

        // A snippet that takes longer than any one request may: created at once, polled, collected.
        const slow = { messages: [], result: null, error: null };
        const stream = client.experimental.tasks.callToolStream(
            { name: 'execute_code', arguments: { code: script.slow } },
            CallToolResultSchema,
            { ...options, task: { ttl: 60000 } },
        );
        for await (const message of stream) {
            const task = message.task ?? {};
            slow.messages.push({ type: message.type, status: task.status, statusMessage: task.statusMessage });
            if (message.type === 'result') slow.result = message.result;
            if (message.type === 'error') slow.error = String(message.error?.message ?? message.error);
        }
        report.slow = slow;

        // One that would run for minutes: its status while it runs, listed, cancelled.
        const forever = {};
        const started = client.experimental.tasks.callToolStream(
            { name: 'execute_code', arguments: { code: script.forever } },
            CallToolResultSchema,
            { ...options, task: { ttl: 60000 } },
        );
        for await (const message of started) {
            if (message.type === 'taskCreated') { forever.taskId = message.task.taskId; break; }
        }
        do {
            await sleep(200);
            forever.working = await client.experimental.tasks.getTask(forever.taskId, options);
        } while (!(forever.working.statusMessage ?? '').includes('tool call'));
        forever.listed = (await client.experimental.tasks.listTasks(undefined, options)).tasks.map((t) => t.taskId);
        forever.cancelled = await client.experimental.tasks.cancelTask(forever.taskId, options);
        forever.after = await client.experimental.tasks.getTask(forever.taskId, options);
        report.forever = forever;

        try {
            await client.experimental.tasks.getTaskResult(forever.taskId, CallToolResultSchema, options);
        } catch (error) {
            report.resultOfCancelled = String(error?.message ?? error);
        }
        try {
            await client.experimental.tasks.getTask('no-such-task', options);
        } catch (error) {
            report.unknown = String(error?.message ?? error);
        }
    } finally {
        await client.close();
    }
    process.stdout.write(JSON.stringify(report));
}

main().catch((error) => {
    process.stdout.write(JSON.stringify({ fatal: String(error?.stack ?? error) }));
    process.exit(1);
});
