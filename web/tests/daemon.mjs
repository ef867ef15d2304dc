// A real pandastackd for the dashboard's browser test: started on a free
// loopback port with a fresh data dir, over the template cache
// (PANDASTACK_CACHE), serving the built dashboard (PANDASTACK_WEB_DIR);
// stopped with every sandbox and QEMU process it made.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, readdirSync, statSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const DAEMON = process.env.PANDASTACKD ?? path.join(repo, 'build', 'pandastackd');
const CACHE = process.env.PANDASTACK_CACHE ?? '/var/cache/pandastack';
const WEB_DIR = process.env.PANDASTACK_WEB_DIR ?? path.join(repo, 'build', 'web');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Every qemu.pid under dir (the sandboxes' and the pool's run dirs). */
function qemuPids(dir) {
  const pids = [];
  const walk = (d) => {
    let names;
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = path.join(d, n);
      let st;
      try {
        st = statSync(p);
      } catch {
        continue;
      }
      if (st.isDirectory()) walk(p);
      else if (n === 'qemu.pid') {
        const pid = Number(readFileSync(p, 'utf8').trim());
        if (Number.isInteger(pid) && pid > 1) pids.push(pid);
      }
    }
  };
  walk(dir);
  return pids;
}

export async function startDaemon() {
  const root = mkdtempSync(path.join(tmpdir(), 'pandastack-web-test-'));
  const data = path.join(root, 'data');
  const logPath = path.join(root, 'daemon.log');
  const log = openSync(logPath, 'a');
  const proc = spawn(DAEMON, ['--listen', '127.0.0.1:0', '--data-dir', data, '--cache', CACHE,
    '--web-dir', WEB_DIR, '--pool-size', '1'], { stdio: ['ignore', 'ignore', log] });
  let exited = null;
  proc.on('exit', (code, sig) => (exited = { code, sig }));
  let port = null;
  for (let i = 0; i < 600 && !port; i++) {
    if (exited) throw new Error(`pandastackd exited (${JSON.stringify(exited)}):\n${readFileSync(logPath, 'utf8')}`);
    const m = /event=http\.listening host=\S+ port=(\d+)/.exec(readFileSync(logPath, 'utf8'));
    if (m) port = Number(m[1]);
    else await sleep(100);
  }
  if (!port) throw new Error('pandastackd did not start listening');
  const adminKey = readFileSync(path.join(data, 'admin.key'), 'utf8').trim();
  const url = `http://127.0.0.1:${port}`;

  /** One API call from Node (not the browser). */
  async function api(method, p, { key = adminKey, json } = {}) {
    const headers = { Authorization: `Bearer ${key}` };
    if (json !== undefined) headers['Content-Type'] = 'application/json';
    const r = await fetch(url + p, { method, headers, body: json === undefined ? undefined : JSON.stringify(json) });
    const text = await r.text();
    let body = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: r.status, body };
  }

  async function stop() {
    try {
      const r = await api('GET', '/v1/sandboxes?status=running');
      for (const s of r.body?.sandboxes ?? []) await api('DELETE', `/v1/sandboxes/${s.id}`);
    } catch {
      /* the daemon may be gone already */
    }
    if (!exited) {
      proc.kill('SIGTERM');
      for (let i = 0; i < 600 && !exited; i++) await sleep(100);
      if (!exited) proc.kill('SIGKILL');
    }
    // QEMU outlives its daemon by design: end every one this daemon made
    for (const pid of qemuPids(data)) {
      try {
        if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(data)) process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    rmSync(root, { recursive: true, force: true });
  }

  return { url, adminKey, api, stop, log: () => readFileSync(logPath, 'utf8') };
}
