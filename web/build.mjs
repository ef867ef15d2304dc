// Builds the dashboard into a flat directory of static files that
// pandastackd serves (docs/dashboard.md):
//   index.html, frame.html, favicon.svg  (fixed names, revalidated)
//   app.HASH.js, frame.HASH.js, style.HASH.css (+ .map)  (cached for good)
// Usage: node build.mjs [--outdir DIR]   (default: dist)
import * as esbuild from 'esbuild';
import { readFile, writeFile, rm, mkdir, copyFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const at = argv.indexOf('--outdir');
const outdir = path.resolve(at >= 0 && argv[at + 1] ? argv[at + 1] : path.join(here, 'dist'));

await rm(outdir, { recursive: true, force: true });
await mkdir(outdir, { recursive: true });

const result = await esbuild.build({
  absWorkingDir: here,
  entryPoints: { app: 'src/app/main.ts', frame: 'src/frame/frame.ts', style: 'src/style.css' },
  entryNames: '[name].[hash]',
  outdir,
  bundle: true,
  format: 'iife',
  target: ['chrome100', 'firefox100', 'safari15'],
  minify: true,
  sourcemap: 'linked',
  charset: 'utf8',
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
});

// entry name -> built file name
const built = {};
for (const [file, out] of Object.entries(result.metafile.outputs)) {
  if (!out.entryPoint || file.endsWith('.map')) continue;
  built[path.basename(out.entryPoint).replace(/\.(ts|css)$/, '')] = path.basename(file);
}
for (const want of ['main', 'frame', 'style'])
  if (!built[want] || !/^[a-z]+\.[A-Z0-9]{8}\.(js|css)$/.test(built[want]))
    throw new Error(`build: no hashed output for ${want}: ${JSON.stringify(built)}`);

async function page(name, subst) {
  let text = await readFile(path.join(here, 'src', name), 'utf8');
  for (const [k, v] of Object.entries(subst)) text = text.replaceAll(`@${k}@`, v);
  if (/@[A-Z]+@/.test(text)) throw new Error(`build: ${name} has an unfilled placeholder`);
  await writeFile(path.join(outdir, name), text);
}
await page('index.html', { APP: built.main, STYLE: built.style });
await page('frame.html', { FRAME: built.frame });
await copyFile(path.join(here, 'src', 'favicon.svg'), path.join(outdir, 'favicon.svg'));
console.log(`web: built ${['index.html', 'frame.html', built.main, built.frame, built.style].join(' ')} in ${outdir}`);
