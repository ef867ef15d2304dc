// The files tab: browse the guest's directories, upload files into the one
// shown, download or delete a file, make a folder.

import { api, describe, FileEntry } from '../api';
import { h, replace } from '../dom';
import { bytes, when } from '../format';
import { Page } from '../page';
import { busy, confirmAction, errorBox, loading, statusLine } from '../ui';

function join(dir: string, name: string): string {
  return dir.endsWith('/') ? dir + name : `${dir}/${name}`;
}

function parent(dir: string): string {
  const p = dir.replace(/\/+$/, '').replace(/\/[^/]*$/, '');
  return p || '/';
}

export function filesTab(sandboxId: string): Page {
  let dir = '/workspace';
  const status = statusLine();
  const listing = h('div', { class: 'table-wrap' });
  const pathInput = h('input', { type: 'text', id: 'files-path', class: 'mono', value: dir, spellcheck: false, autocomplete: 'off', attrs: { 'aria-label': 'Folder' } });
  const upBtn = h('button', { type: 'button', attrs: { 'aria-label': 'Parent folder' } }, '↑ Up');
  const fileInput = h('input', { type: 'file', id: 'upload-input', multiple: true, class: 'offscreen' });
  const uploadBtn = h('button', { type: 'button', class: 'primary' }, 'Upload files…');
  const mkdirBtn = h('button', { type: 'button' }, 'New folder');

  async function show(path: string): Promise<void> {
    replace(listing, loading(`Listing ${path}…`));
    try {
      const l = await api.list(sandboxId, path);
      dir = l.path;
      pathInput.value = dir;
      replace(listing, table(l.entries), l.truncated ? h('p', { class: 'muted' }, 'Only the first 10000 entries are shown.') : null);
    } catch (e) {
      replace(listing, errorBox(e, `Could not list ${path}`));
    }
  }

  function table(entries: FileEntry[]): HTMLElement {
    if (!entries.length) return h('p', { class: 'muted' }, 'This folder is empty.');
    return h('table', { class: 'files' },
      h('caption', { class: 'offscreen' }, `Files in ${dir}`),
      h('thead', null, h('tr', null, ...['Name', 'Size', 'Modified', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, ...entries.map((e) => {
        const open = e.type === 'dir'
          ? h('a', { href: '#', on: { click: (ev) => { ev.preventDefault(); void show(e.path); } } }, `${e.name}/`)
          : h('span', null, e.name, e.type === 'symlink' ? ' →' : '');
        const dl = h('button', { type: 'button', attrs: { 'aria-label': `Download ${e.name}` } }, 'Download');
        dl.addEventListener('click', () => download(e, dl));
        const del = h('button', { type: 'button', class: 'danger', attrs: { 'aria-label': `Delete ${e.name}` } }, 'Delete');
        del.addEventListener('click', () => remove(e, del));
        return h('tr', { attrs: { 'data-path': e.path, 'data-type': e.type } },
          h('td', { attrs: { 'data-label': 'Name' } }, open),
          h('td', { attrs: { 'data-label': 'Size' } }, e.type === 'dir' ? '—' : bytes(e.size)),
          h('td', { attrs: { 'data-label': 'Modified' } }, when(e.mtime_ms)),
          h('td', { class: 'actions' }, e.type === 'file' ? dl : null, del));
      })));
  }

  async function download(e: FileEntry, button: HTMLButtonElement): Promise<void> {
    try {
      const blob = await busy(button, 'Downloading…', () => api.download(sandboxId, e.path));
      const url = URL.createObjectURL(blob);
      const a = h('a', { href: url, download: e.name, class: 'offscreen' });
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      status.say(`Downloaded ${e.path} (${bytes(blob.size)}).`);
    } catch (err) {
      status.say(`Could not download ${e.path}: ${describe(err)}`, true);
    }
  }

  async function remove(e: FileEntry, button: HTMLButtonElement): Promise<void> {
    const what = e.type === 'dir' ? `the folder ${e.path} and everything in it` : e.path;
    if (!(await confirmAction('Delete?', `Delete ${what}?`, 'Delete'))) return button.focus();
    try {
      await busy(button, 'Deleting…', () => api.remove(sandboxId, e.path));
      status.say(`Deleted ${e.path}.`);
    } catch (err) {
      status.say(`Could not delete ${e.path}: ${describe(err)}`, true);
    }
    await show(dir);
  }

  uploadBtn.addEventListener('click', () => fileInput.click());
  fileInput.addEventListener('change', async () => {
    const files = Array.from(fileInput.files ?? []);
    fileInput.value = '';
    for (const f of files) {
      const target = join(dir, f.name);
      status.say(`Uploading ${f.name} (${bytes(f.size)})…`);
      try {
        const r = await busy(uploadBtn, 'Uploading…', () => api.upload(sandboxId, target, f));
        status.say(`Uploaded ${r.path} (${bytes(r.size)}).`);
      } catch (e) {
        status.say(`Could not upload ${f.name}: ${describe(e)}`, true);
        break;
      }
    }
    await show(dir);
  });
  mkdirBtn.addEventListener('click', async () => {
    const name = prompt('Name of the new folder');
    if (!name) return;
    try {
      await api.mkdir(sandboxId, join(dir, name));
      await show(dir);
    } catch (e) {
      status.say(`Could not make the folder: ${describe(e)}`, true);
    }
  });
  upBtn.addEventListener('click', () => void show(parent(dir)));
  const go = h('form', { class: 'path-form' }, pathInput, h('button', { type: 'submit' }, 'Open'));
  go.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void show(pathInput.value.trim() || '/');
  });

  void show(dir);
  return {
    el: h('section', { class: 'files' },
      h('div', { class: 'toolbar' }, upBtn, go, h('span', { class: 'spacer' }), mkdirBtn, uploadBtn, fileInput),
      status,
      listing),
  };
}
