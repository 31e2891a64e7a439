import * as z from 'zod';

/** A JSON Schema (draft 2020-12, OpenAPI 3.1's dialect) as an object. */
export type JsonSchema = { [key: string]: unknown };

/**
 * The JSON Schema of what `schema` takes as input: the wire form a caller sends or reads (a parameter that zod
 * turns into a number from a string is described as both), by zod's own converter. A check zod cannot say in JSON
 * Schema (a refinement, a transform's function) is left to the service, which still applies it.
 */
export function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any', reused: 'inline' }) as JsonSchema;
  delete json.$schema;
  return json;
}

/** Whether a value of `schema` is an array or an object, alone or among its alternatives (a form sends it as JSON). */
export function holdsJson(schema: JsonSchema): boolean {
  const types = [schema.type].flat();
  if (types.includes('array') || types.includes('object')) return true;
  return [schema.anyOf, schema.oneOf].some((list) => Array.isArray(list) && list.some((s) => holdsJson(s as JsonSchema)));
}

/** The properties of an object schema, each with whether it is required. */
export function propertiesOf(schema: JsonSchema): Array<{ name: string; schema: JsonSchema; required: boolean }> {
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return Object.entries((schema.properties as Record<string, JsonSchema> | undefined) ?? {}).map(([name, property]) => ({
    name,
    schema: property,
    required: required.has(name),
  }));
}
