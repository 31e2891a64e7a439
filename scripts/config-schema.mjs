// `npm run schema`: writes schema/config.schema.json, the agent's configuration as a JSON Schema, from the zod schema
// that validates it (src/config/jsonSchema.ts, as tsc built it into dist/src), and docs/config-keys.md, every key
// read from that JSON Schema (src/config/keysReference.ts). Commit both with the change to the schema:
// test/unit/configSchema.test.ts fails while either differs. docs/config-schema.md says how editors use the schema.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { configJsonSchemaText, configKeysText } from '../dist/src/config/jsonSchema.js';

const root = join(import.meta.dirname, '..');
for (const [path, text] of [
  ['schema/config.schema.json', configJsonSchemaText()],
  ['docs/config-keys.md', configKeysText()],
]) {
  const file = join(root, path);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  console.log(`wrote ${relative(root, file)}`);
}
