// Generate src/generated/schemas.ts, the TypeScript types of every shape the memory-ls server
// publishes in ../schemas/*.schema.json (its command results and the `memoryLs` settings), so the
// client has no hand-copied shape that can drift from the server's.
//
//   node scripts/generate-types.mjs           write the file (`npm run generate`, `make schemas`)
//   node scripts/generate-types.mjs --check   exit 1 when the committed file is stale (run by `npm run typecheck`)
import { isDeepStrictEqual } from 'node:util';
import { readFileSync, readdirSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const schemasDir = join(root, '..', 'schemas');
const outFile = join(root, 'src', 'generated', 'schemas.ts');
const check = process.argv.includes('--check');

const BANNER = `// GENERATED from schemas/*.schema.json by vscode-client/scripts/generate-types.mjs: do not edit.
// The schemas come from the server's models (memory_ls/core/models.py, memory_ls/server/settings_model.py);
// regenerate both with \`make schemas\`.`;

/** The same schema without `title`s: json-schema-to-typescript makes a named type of every titled
 * schema, so property titles (pydantic's "Action", "Scope", ...) would each become a type alias. */
function untitled(schema) {
  if (Array.isArray(schema)) return schema.map(untitled);
  if (schema === null || typeof schema !== 'object') return schema;
  const out = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'title') continue;
    // Under `properties` the keys are property names, never keywords: keep a property called "title".
    out[key] = key === 'properties'
      ? Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, untitled(sub)]))
      : untitled(value);
  }
  return out;
}

/** One schema holding every published shape under `$defs` (by its title) and a root that names them all. */
function combined() {
  const files = readdirSync(schemasDir).filter((name) => name.endsWith('.schema.json')).sort();
  if (files.length === 0) throw new Error(`no *.schema.json in ${schemasDir}`);
  const defs = {};
  const properties = {};
  const define = (name, schema, source) => {
    if (name in defs && !isDeepStrictEqual(defs[name], schema)) {
      throw new Error(`${source}: a different shape is already called ${name}`);
    }
    defs[name] = schema;
  };
  for (const file of files) {
    const { $defs: nested = {}, ...schema } = JSON.parse(readFileSync(join(schemasDir, file), 'utf8'));
    if (typeof schema.title !== 'string') throw new Error(`${file} has no title to name its type`);
    for (const [name, sub] of Object.entries(nested)) define(name, untitled(sub), file);
    define(schema.title, untitled(schema), file);
    properties[file.replace(/\.schema\.json$/, '')] = { $ref: `#/$defs/${schema.title}` };
  }
  // Each definition keeps its own name as its only title: it becomes the TypeScript type's name.
  for (const [name, schema] of Object.entries(defs)) schema.title = name;
  return {
    title: 'ServerShapes',
    description: 'Every shape the server publishes, by its file name in schemas/.',
    type: 'object',
    properties,
    required: Object.keys(properties),
    additionalProperties: false,
    $defs: defs,
  };
}

const { compile } = await import('json-schema-to-typescript').catch((error) => {
  console.error(`json-schema-to-typescript is not installed: run \`npm ci\` in vscode-client (${error.message})`);
  process.exit(2);
});
const text = await compile(combined(), 'ServerShapes', {
  bannerComment: BANNER,
  additionalProperties: false,
  unreachableDefinitions: true,
  strictIndexSignatures: true,
  style: { singleQuote: true, printWidth: 120, trailingComma: 'all' },
});

if (check) {
  const current = existsSync(outFile) ? readFileSync(outFile, 'utf8') : '';
  if (current !== text) {
    console.error(
      'vscode-client/src/generated/schemas.ts is stale: the schemas in schemas/ changed.\n' +
        'Run `make schemas` (or `npm run generate` in vscode-client) and commit the result.',
    );
    process.exit(1);
  }
} else {
  mkdirSync(dirname(outFile), { recursive: true });
  writeFileSync(outFile, text);
  console.log(`wrote ${outFile}`);
}
