import * as z from 'zod';
import { configSchema } from './schema.js';
import { keysReference } from './keysReference.js';

/**
 * The agent's configuration file as a JSON Schema (draft 2020-12), generated from the zod schema that validates it:
 * the file `npm run schema` writes to schema/config.schema.json, which editors with the YAML language server read
 * (docs/config-schema.md). Read as written (io: input): a key with a default may be left out. What JSON Schema
 * cannot say (the checks across keys, a refinement such as an IANA time zone) only `door-agent config check` checks.
 * A subschema with an id in its meta (a reader) is one entry of $defs.
 */
function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(configSchema, { io: 'input', target: 'draft-2020-12', unrepresentable: 'throw', override: sameItems });
  return Object.assign(
    {
      $schema: schema.$schema,
      title: 'door-agent configuration',
      description:
        'The door agent\'s config.yaml. Generated from src/config/schema.ts by "npm run schema"; "door-agent config check" checks more (docs/config-schema.md).',
    },
    schema,
  );
}

/** schema/config.schema.json as `npm run schema` writes it (test/unit/configSchema.test.ts compares). @public */
export function configJsonSchemaText(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}

/** docs/config-keys.md as `npm run schema` writes it: every key, read from the same JSON Schema. @public */
export function configKeysText(): string {
  return keysReference(configJsonSchema());
}

/**
 * A pair whose two items have one schema (a time range [from, to]) as `items` with two items exactly, not as
 * prefixItems: the YAML language server reads draft-07, where prefixItems is unknown and zod's `items: false`
 * beside it would refuse every item.
 */
function sameItems(ctx: { jsonSchema: z.core.JSONSchema.BaseSchema }): void {
  const json = ctx.jsonSchema;
  const items = json.prefixItems;
  if (!Array.isArray(items) || items.length === 0) return;
  const first = JSON.stringify(items[0]);
  if (!items.every((item) => JSON.stringify(item) === first)) return;
  json.items = items[0]!;
  delete json.prefixItems;
}
