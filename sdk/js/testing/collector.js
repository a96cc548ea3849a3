// A real otelbench collector for the SDK's tests: `otelbench serve` in a process of its
// own, on a free port, with its lake and write-ahead log in a temporary folder; the lake
// read back through `otelbench sql --format json` (the CLI's read-only path over the views).
// OTELBENCH_PYTHON names the Python that has otelbench (default: the repository's .venv).

import { spawn, execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
export const PYTHON = process.env.OTELBENCH_PYTHON || join(ROOT, '.venv', 'bin', 'python');
const START_MS = 60_000;

const run = promisify(execFile);

/**
 * Start a collector; `auth`: the OTLP receiver's auth section (docs/config.md). Resolves
 * to `{ endpoint, lake, sql, stop }` once it listens.
 */
export async function startCollector({ auth } = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'otelbench-sdk-js-'));
  const lake = join(dir, 'lake');
  const config = {
    receivers: { otlp: { protocols: { http: { endpoint: '127.0.0.1:0' } }, ...(auth ? { auth } : {}) } },
    exporters: { parquet: { path: lake, flush: { interval_s: 0.2 } } },
    service: {
      wal: { dir: join(dir, 'wal') },
      pipelines: { traces: { receivers: ['otlp'], exporters: ['parquet'] } },
    },
  };
  const path = join(dir, 'otel-config.yaml');
  await writeFile(path, JSON.stringify(config)); // JSON is YAML
  const child = spawn(PYTHON, ['-m', 'otelbench.cli', 'serve', '--config', path], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
  const endpoint = await new Promise((resolveStart, rejectStart) => {
    const timer = setTimeout(() => rejectStart(new Error(`the collector did not start in ${START_MS} ms: ${stderr}`)), START_MS);
    createInterface({ input: child.stdout }).on('line', (line) => {
      const found = /OTLP\/HTTP listening on (http:\/\/\S+)/.exec(line);
      if (found) {
        clearTimeout(timer);
        resolveStart(found[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      rejectStart(new Error(`the collector exited (${code}): ${stderr}`));
    });
  });

  /** The rows of a read-only query over the lake's views, as objects. */
  async function sql(query) {
    const { stdout } = await run(PYTHON, ['-m', 'otelbench.cli', 'sql', '--lake', lake, '--format', 'json', query],
      { cwd: ROOT, maxBuffer: 64 * 2 ** 20 });
    return JSON.parse(stdout);
  }

  async function stop() {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
    await rm(dir, { recursive: true, force: true });
  }

  return { endpoint, lake, sql, stop };
}

/** Poll `check` (async) until it returns something truthy, or fail after `timeoutMs` naming `what`. */
export async function waitFor(check, what, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await check();
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** The text of a run's one message (agent_runs' input and output columns). */
export function content(messagesJson) {
  return JSON.parse(messagesJson)[0].parts[0].content;
}
