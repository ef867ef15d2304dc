// The console tab: a notebook over one code context of the sandbox.  The
// first run starts the context; each run streams its cell's events
// (run_code_stream) into the cell's output as they come.

import { api, ApiError, CellError, Context, describe, Result } from '../api';
import { h, replace } from '../dom';
import { appendStream, renderError, renderResult } from '../outputs';
import { Page } from '../page';
import { busy, confirmAction, errorBox, statusLine } from '../ui';

interface Done {
  error: CellError | null;
  execution_count: number | null;
  exit_code: number;
  duration_ms: number;
}

export function consoleTab(sandboxId: string): Page {
  let ctx: Promise<Context> | null = null;
  let ctxId: string | null = null;
  const runs = new Set<AbortController>();
  const info = h('span', { class: 'muted' }, 'No context yet: the first run starts one.');
  const status = statusLine();
  const cells = h('ol', { class: 'cells', attrs: { 'aria-label': 'Cells' } });

  function context(): Promise<Context> {
    if (!ctx) {
      replace(info, 'Starting a Python context…');
      ctx = api.createContext(sandboxId).then(
        (c) => {
          ctxId = c.id;
          replace(info, 'Context ', h('code', null, c.id), ` (${c.kernel}, ${c.language})`);
          return c;
        },
        (e) => {
          ctx = null;
          replace(info, 'No context: ', describe(e));
          throw e;
        });
    }
    return ctx;
  }

  async function run(code: string): Promise<void> {
    const prompt = h('span', { class: 'prompt' }, 'In [*]:');
    const out = h('div', { class: 'outputs', attrs: { 'aria-live': 'polite' } });
    const meta = h('span', { class: 'muted cell-meta' }, 'running…');
    const cell = h('li', { class: 'cell running', attrs: { 'aria-busy': 'true' } },
      h('div', { class: 'cell-in' }, prompt, h('pre', { class: 'code' }, code)),
      out,
      meta);
    cells.appendChild(cell);
    cell.scrollIntoView({ block: 'nearest' });
    const ac = new AbortController();
    runs.add(ac);
    let finished = false;
    try {
      const c = await context();
      await api.runCell(sandboxId, c.id, code, (ev) => {
        const d = JSON.parse(ev.data);
        if (ev.event === 'stdout' || ev.event === 'stderr') appendStream(out, ev.event, String(d.text ?? ''));
        else if (ev.event === 'result') out.appendChild(renderResult(d as Result));
        else if (ev.event === 'done') {
          finished = true;
          const done = d as Done;
          if (done.error) out.appendChild(renderError(done.error));
          prompt.textContent = `In [${done.execution_count ?? ' '}]:`;
          meta.textContent = `${done.error ? 'failed' : 'done'} in ${done.duration_ms} ms`;
          cell.classList.toggle('failed', !!done.error);
        } else if (ev.event === 'error') {
          finished = true;
          const err = new ApiError(0, d.error?.code ?? 'error', d.error?.message ?? 'the cell failed');
          out.appendChild(errorBox(err, 'The run failed'));
          if (err.code === 'context_not_found') ctx = null;
          meta.textContent = 'failed';
        }
      }, ac.signal);
      if (!finished) {
        out.appendChild(errorBox(new Error('the stream ended before the cell did'), 'The run failed'));
        meta.textContent = 'failed';
      }
    } catch (e) {
      if ((e as Error).name === 'AbortError') meta.textContent = 'stopped watching';
      else {
        if (e instanceof ApiError && e.code === 'context_not_found') ctx = null;
        out.appendChild(errorBox(e, 'The run failed'));
        meta.textContent = 'failed';
      }
    } finally {
      runs.delete(ac);
      cell.classList.remove('running');
      cell.removeAttribute('aria-busy');
    }
  }

  const editor = h('textarea', {
    class: 'editor',
    id: 'code',
    rows: 5,
    spellcheck: false,
    placeholder: 'print("hello")   (Shift+Enter or Ctrl+Enter runs)',
    attrs: { 'aria-label': 'Python code', autocapitalize: 'off', autocomplete: 'off' },
  });
  const runBtn = h('button', { type: 'submit', class: 'primary' }, 'Run');
  const form = h('form', { class: 'editor-form' }, editor, h('div', { class: 'row' }, runBtn, h('small', { class: 'muted' }, 'Shift+Enter or Ctrl+Enter runs the cell')));
  const submit = () => {
    const code = editor.value;
    if (!code.trim()) return;
    editor.value = '';
    void run(code);
  };
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    submit();
  });
  editor.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.shiftKey || ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      submit();
    }
  });

  const interruptBtn = h('button', { type: 'button' }, 'Interrupt');
  interruptBtn.addEventListener('click', async () => {
    if (!ctxId) return status.say('Nothing is running.');
    try {
      await busy(interruptBtn, 'Interrupting…', () => api.interrupt(sandboxId, ctxId!));
      status.say('Interrupted the running cell.');
    } catch (e) {
      status.say(`Could not interrupt: ${describe(e)}`, true);
    }
  });
  const restartBtn = h('button', { type: 'button' }, 'Restart kernel');
  restartBtn.addEventListener('click', async () => {
    if (!ctxId) return status.say('No context yet.');
    if (!(await confirmAction('Restart the kernel?', 'Every variable and import of this context is lost.', 'Restart'))) return restartBtn.focus();
    try {
      await busy(restartBtn, 'Restarting…', () => api.restart(sandboxId, ctxId!));
      status.say('The kernel was restarted: its state is gone.');
    } catch (e) {
      status.say(`Could not restart: ${describe(e)}`, true);
    }
  });

  return {
    el: h('section', { class: 'console' },
      h('div', { class: 'toolbar' }, info, h('span', { class: 'spacer' }), interruptBtn, restartBtn),
      status,
      cells,
      form),
    stop: () => runs.forEach((ac) => ac.abort()),
  };
}
