/**
 * A console form's fields as its route takes them (issue 51 item 5): the names of a multiple choice (`lists`, a
 * route's `formLists`: the doors of a guest link) always as a list, one value or none included; every other field
 * at most once. A field given twice that takes one value is refused: no value is silently dropped.
 */
export function formFields(body: unknown, lists: readonly string[]): { fields: Record<string, string | string[]> } | { refused: string } {
  const given = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  // No prototype: a field named __proto__ is a field like any other.
  const fields = Object.create(null) as Record<string, string | string[]>;
  for (const [name, value] of Object.entries(given)) {
    const values = [value].flat();
    if (values.some((v) => typeof v !== 'string')) return { refused: `the form field "${name}" is not text` };
    if (lists.includes(name)) fields[name] = values as string[];
    else if (values.length > 1) return { refused: `the form field "${name}" was sent ${values.length} times; it takes one value` };
    else fields[name] = values[0] as string;
  }
  for (const name of lists) fields[name] ??= [];
  return { fields };
}
