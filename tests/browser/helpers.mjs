// What the browser tests share: checks, timed steps, polling, free ports.
import net from 'node:net';

export const WAIT_MS = 15000;

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
