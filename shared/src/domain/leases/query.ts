// GET /v1/proxies query: `attr.<key>=<value>` (equality, repeatable over distinct keys), `healthy=true|false`,
// `phase=<Phase>`. Parsed by hand because attribute keys are open-ended; anything else is a 400 with a
// stable code rather than silently ignored, so a typo never widens a crawler's pool.
import { Phase } from '../proxy.js';

export interface ProxyQuery {
  attributes: Record<string, string>;
  healthy?: boolean;
  phase?: Phase;
}

export type ParsedQuery = { ok: true; query: ProxyQuery } | { ok: false; param: string; message: string };

const ATTR_PREFIX = 'attr.';
const ATTRIBUTE_KEY = /^[a-zA-Z0-9]([-_.a-zA-Z0-9]{0,61}[a-zA-Z0-9])?$/;
const MAX_PARAMS = 34;

export function parseProxyQuery(params: Iterable<readonly [string, string]>): ParsedQuery {
  const query: ProxyQuery = { attributes: Object.create(null) };
  const seen = new Set<string>();
  for (const [name, value] of params) {
    if (seen.has(name)) return fail(name, 'given more than once');
    seen.add(name);
    if (seen.size > MAX_PARAMS) return fail(name, `at most ${MAX_PARAMS} parameters`);
    if (name.startsWith(ATTR_PREFIX)) {
      const key = name.slice(ATTR_PREFIX.length);
      if (!ATTRIBUTE_KEY.test(key)) return fail(name, 'attribute keys are 1-63 of [-_.a-zA-Z0-9]');
      if (value.length > 256) return fail(name, 'attribute values are at most 256 characters');
      query.attributes[key] = value;
    } else if (name === 'healthy') {
      if (value !== 'true' && value !== 'false') return fail(name, 'true or false');
      query.healthy = value === 'true';
    } else if (name === 'phase') {
      const phase = Phase.safeParse(value);
      if (!phase.success) return fail(name, `one of ${Phase.options.join(', ')}`);
      query.phase = phase.data;
    } else {
      return fail(name, 'unknown parameter (filters are attr.<key>, healthy, phase)');
    }
  }
  return { ok: true, query };
}

function fail(param: string, message: string): ParsedQuery {
  return { ok: false, param, message };
}
