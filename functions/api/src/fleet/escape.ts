// HTML escaping for every value the fleet page prints: names, attributes, messages and targets come from
// API callers and must never become markup.

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export const esc = (v: unknown): string => String(v ?? '').replace(/[&<>"']/g, (ch) => ENTITIES[ch]!);
