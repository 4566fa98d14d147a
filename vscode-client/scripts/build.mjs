// Bundle the extension with esbuild and copy the TextMate grammar from ../syntaxes into dist/.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const production = process.argv.includes('--production');

await build({
  entryPoints: [join(root, 'src', 'extension.ts')],
  outfile: join(root, 'dist', 'extension.js'),
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['vscode'],
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
});

mkdirSync(join(root, 'dist', 'syntaxes'), { recursive: true });
copyFileSync(join(root, '..', 'syntaxes', 'memory.tmLanguage.json'), join(root, 'dist', 'syntaxes', 'memory.tmLanguage.json'));
console.log(`built dist/extension.js${production ? ' (production)' : ''} and dist/syntaxes/memory.tmLanguage.json`);
