// `npm run schema`: writes schema/config.schema.json, the agent's configuration as a JSON Schema, from the zod schema
// that validates it (src/config/jsonSchema.ts, as tsc built it into dist/src). Commit the file with the change to the
// schema: test/unit/configSchemaFile.test.ts fails while it differs. docs/config-schema.md says how editors use it.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { configJsonSchemaText } from '../dist/src/config/jsonSchema.js';

const root = join(import.meta.dirname, '..');
const file = join(root, 'schema/config.schema.json');
mkdirSync(dirname(file), { recursive: true });
writeFileSync(file, configJsonSchemaText());
console.log(`wrote ${relative(root, file)}`);
