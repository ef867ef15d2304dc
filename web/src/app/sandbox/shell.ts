// The shell tab: a command run with exec_stream (/bin/sh -c in /workspace),
// its stdout and stderr shown as they arrive, then its exit status.

import { api, ApiError } from '../api';
import { h } from '../dom';
import { Page } from '../page';
import { errorBox } from '../ui';

interface Exit {
  exit_code: number;
  duration_ms: number;
  timed_out: boolean;
  signal: number | null;
}

export function shellTab(sandboxId: string): Page {
  const runs = h('div', { class: 'shell-runs' });
  const input = h('input', { type: 'text', id: 'shell-cmd', class: 'mono', autocomplete: 'off', spellcheck: false, placeholder: 'ls -la', attrs: { 'aria-label': 'Command', autocapitalize: 'off' } });
  const runBtn = h('button', { type: 'submit', class: 'primary' }, 'Run');
  const cancelBtn = h('button', { type: 'button', disabled: true }, 'Cancel');
  let current: AbortController | null = null;
  const history: string[] = [];
  let back = 0;

  async function run(cmd: string): Promise<void> {
    const out = h('pre', { class: 'terminal', attrs: { 'aria-live': 'polite' } });
    const foot = h('p', { class: 'muted' }, 'running…');
    const block = h('div', { class: 'shell-run', attrs: { 'aria-busy': 'true' } }, h('pre', { class: 'shell-cmd' }, `$ ${cmd}`), out, foot);
    runs.appendChild(block);
    block.scrollIntoView({ block: 'nearest' });
    const ac = new AbortController();
    current = ac;
    cancelBtn.disabled = false;
    runBtn.disabled = true;
    try {
      await api.execStream(sandboxId, cmd, (ev) => {
        const d = JSON.parse(ev.data);
        if (ev.event === 'stdout' || ev.event === 'stderr') out.appendChild(h('span', { class: ev.event }, String(d.data ?? '')));
        else if (ev.event === 'started') foot.textContent = `running (pid ${d.pid})…`;
        else if (ev.event === 'exit') {
          const x = d as Exit;
          foot.textContent = `exit ${x.exit_code}${x.signal ? ` (signal ${x.signal})` : ''}${x.timed_out ? ', timed out' : ''} in ${x.duration_ms} ms`;
          foot.className = x.exit_code === 0 ? 'muted exit' : 'error exit';
        } else if (ev.event === 'error') {
          foot.replaceWith(errorBox(new ApiError(0, d.error?.code ?? 'error', d.error?.message ?? 'the command failed'), 'The command failed'));
        }
      }, ac.signal);
    } catch (e) {
      if ((e as Error).name === 'AbortError') foot.textContent = 'cancelled (the command was killed)';
      else foot.replaceWith(errorBox(e, 'The command failed'));
    } finally {
      block.removeAttribute('aria-busy');
      current = null;
      cancelBtn.disabled = true;
      runBtn.disabled = false;
      input.focus();
    }
  }

  const form = h('form', { class: 'shell-form' }, h('span', { class: 'prompt', attrs: { 'aria-hidden': 'true' } }, '$'), input, runBtn, cancelBtn);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const cmd = input.value;
    if (!cmd.trim() || current) return;
    history.push(cmd);
    back = 0;
    input.value = '';
    void run(cmd);
  });
  input.addEventListener('keydown', (ev) => {
    if (ev.key !== 'ArrowUp' && ev.key !== 'ArrowDown') return;
    ev.preventDefault();
    back = Math.min(history.length, Math.max(0, back + (ev.key === 'ArrowUp' ? 1 : -1)));
    input.value = back ? history[history.length - back] : '';
  });
  cancelBtn.addEventListener('click', () => current?.abort());

  return {
    el: h('section', { class: 'shell' },
      h('p', { class: 'muted' }, 'Each command runs with /bin/sh -c in /workspace; ↑ and ↓ recall earlier ones.'),
      runs,
      form),
    stop: () => current?.abort(),
  };
}
