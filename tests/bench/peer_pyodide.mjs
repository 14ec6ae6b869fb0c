// The peer row of `make bench`: Pyodide, the CPython-on-WebAssembly that pydantic's mcp-run-python
// runs in Deno, here in Node (both from npm, pinned by the Makefile). mcp-run-python itself cannot
// run offline (its imports come from jsr.io, and it loads micropip from Pyodide's CDN), so this
// measures the runtime it is built on, the two ways it can serve an execution:
//   fresh:  a new interpreter per execution (isolation like the gateway's fresh instance)
//   reused: print(1) on one interpreter kept across executions (what mcp-run-python does when the
//           dependencies match: fast, but one execution's state is visible to the next)
// Usage: node peer_pyodide.mjs PYODIDE_DIR FRESH_RUNS REUSED_RUNS [keep-last]; prints one JSON line of
// milliseconds. With keep-last (the quick run), the reused runs take the last fresh interpreter instead
// of loading one more. (PYODIDE_DIR is the npm package's directory: this script lives outside the
// node_modules it is in.)
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [pyodideDir, freshArg, reusedArg, keep] = process.argv.slice(2);
const [freshRuns, reusedRuns] = [freshArg, reusedArg].map(Number);
const { loadPyodide } = await import(pathToFileURL(join(pyodideDir, "pyodide.mjs")).href);
const quiet = { stdout: () => {}, stderr: () => {} };

const fresh = [];
let last = null;
for (let i = 0; i < freshRuns; i++) {
  const started = performance.now();
  last = await loadPyodide(quiet);
  last.runPython("print(1)");
  fresh.push(performance.now() - started);
}

const python = keep === "keep-last" && last !== null ? last : await loadPyodide(quiet);
const reused = [];
for (let i = 0; i < reusedRuns; i++) {
  const started = performance.now();
  python.runPython("print(1)");
  reused.push(performance.now() - started);
}

console.log(JSON.stringify({ fresh, reused }));
