// What the browser tests share: their prerequisites, checks, timed steps,
// polling, free ports, the daemon.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const WAIT_MS = 15000;
const SKIP = 77;
const here = path.dirname(fileURLToPath(import.meta.url));

// Chromium's path and playwright-core's `chromium`, or exit 77 (skipped) when
// either is missing; and the daemon binary meson test passes (exit 1 without).
export async function browserPrerequisites() {
  const executable = process.env.CHROMIUM || '/usr/bin/chromium';
  if (!fs.existsSync(executable)) {
    console.log(`skipped: ${executable} is not installed (scripts/install-deps installs chromium)`);
    process.exit(SKIP);
  }
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch (e) {
    console.log(`skipped: playwright-core is not installed in ${here}/node_modules (run scripts/install-deps)`);
    process.exit(SKIP);
  }
  const bin = process.env.WEBHOOKER_BIN;
  if (!bin) {
    console.error('WEBHOOKER_BIN is not set; run through meson test');
    process.exit(1);
  }
  return { chromium, executable, bin };
}

export function check(condition, message) {
  if (!condition) throw new Error('check failed: ' + message);
}

const started = Date.now();
// Prints one step with the seconds since the test started.
export function step(text) {
  console.log(`[${((Date.now() - started) / 1000).toFixed(1)} s] ${text}`);
}

// Polls `probe` until it returns a truthy value; fails after timeoutMs.
export async function waitFor(what, probe, { intervalMs = 100, timeoutMs = WAIT_MS } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Starts `webhooker serve` on a free port with its data in dataDir, none of
// the caller's WEBHOOKER_* settings, the given admin token and extra flags.
export async function startDaemon(bin, token, dataDir, extraArgs = []) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(WEBHOOKER_|DATA_DIR$|PORT$|DEBUG$|METRICS_)/.test(k)) env[k] = v;
  }
  env.WEBHOOKER_ADMIN_TOKEN = token;
  const child = spawn(bin, ['serve', '--port', '0', '--data-dir', dataDir,
    '--allow-networks', '127.0.0.1/32', ...extraArgs], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the daemon did not start:\n' + stderr)), WAIT_MS);
    child.stdout.on('data', (d) => {
      stdout += d;
      const m = /webhooker listening on (http:\/\/[^ ]+:\d+)/.exec(stdout);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`the daemon exited (${code}):\n${stderr}`)); });
  });
  return { child, url, log: () => stderr };
}

export function stopDaemon(daemon) {
  return new Promise((resolve) => {
    if (!daemon || daemon.child.exitCode !== null) return resolve();
    daemon.child.once('exit', resolve);
    daemon.child.kill('SIGTERM');
  });
}
