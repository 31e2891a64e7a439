/**
 * The console's one way to build HTML: the `html` tag escapes every interpolated value unless it is already Html
 * (built by this tag, or `trusted` for markup the service generated itself, such as a QR code's SVG). A user's
 * name with markup in it therefore shows as text; nothing else in the console writes HTML from strings.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text as HTML: the five characters that can end a text node or an attribute value, escaped. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

type Value = Html | string | number | boolean | null | undefined | readonly Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0]!;
  values.forEach((v, i) => {
    out += render(v) + strings[i + 1]!;
  });
  return new Html(out);
}

/** Markup the service generated itself (never user input): passed through unescaped. */
export function trusted(markup: string): Html {
  return new Html(markup);
}
