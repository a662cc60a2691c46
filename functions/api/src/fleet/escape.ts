// HTML escaping for every value the fleet page prints: names, attributes, messages and targets come from
// API callers and must never become markup. JSON embedded in a <script> block is made inert the same way.

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export const esc = (v: unknown): string => String(v ?? '').replace(/[&<>"']/g, (ch) => ENTITIES[ch]!);

/** JSON safe inside <script type="application/json">: no "</script>", no "<!--", no U+2028/9 surprises. */
export const scriptJson = (v: unknown): string =>
  JSON.stringify(v)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
