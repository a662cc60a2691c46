// `routing apply -f FILE`: a YAML or JSON file of the gateways' ordered routes — what `routing get -o yaml`
// prints (its `revision` says which routing it was saved from; the plane's other fields are dropped), or
// `{routes: [...]}` / a bare list written by hand. Checked against the routing schema the API stores
// (shared/src/messages/gateway-snapshot.ts RoutingRules), and each host against the API's rule for hosts
// (refuseUnmatchableHosts: `10.0.0.1:8080` can match no request), before anything is sent; the API checks
// the rest (selector keys, the number of target checks).
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import {
  RoutingRules,
  refuseUnmatchableHosts,
  withoutTrailingDots,
} from '../shared/src/messages/gateway-snapshot.js';
import type { Io } from './context.js';
import { InputError } from './errors.js';
import { assertInputSize, documentValue, issueLines, readInput } from './input-file.js';

/** What `routing get` prints besides the routes: read back, never sent. */
const SavedRouting = z
  .object({
    routes: z.unknown(),
    revision: z.number().int().min(0).optional(),
    updatedAt: z.string().nullable().optional(),
    updatedBy: z.string().nullable().optional(),
    default: z.boolean().optional(),
    droppedDuplicates: z.array(z.string()).optional(),
  })
  .strict();

export interface RoutingFile {
  routes: z.infer<typeof RoutingRules>;
  /** The revision the file was saved at (`routing get -o yaml`); undefined for a file written by hand. */
  revision: number | undefined;
}

export async function readRoutingFile(
  io: Pick<Io, 'readFile' | 'readStdin'>,
  file: string,
): Promise<RoutingFile> {
  const { text, source } = await readInput(io, file);
  return parseRoutingFile(text, source);
}

export function parseRoutingFile(text: string, source: string): RoutingFile {
  assertInputSize(text, source);
  const docs = parseAllDocuments(text, { uniqueKeys: true });
  const all = Array.isArray(docs) ? docs : [docs];
  // A syntax error is reported as such, even in a document that parsed to nothing.
  for (const d of all) if (d.errors.length > 0) documentValue(d, source);
  const list = all.filter((d) => d.contents !== null);
  if (list.length !== 1) {
    throw new InputError(`${source} must hold one routing (${list.length} YAML documents found)`);
  }
  const value = documentValue(list[0]!, source);
  let routes: unknown = value;
  let revision: number | undefined;
  if (!Array.isArray(value)) {
    const saved = SavedRouting.safeParse(value);
    if (!saved.success) {
      throw new InputError(
        `${source} is not a routing: a list of routes, or {routes: [...]}`,
        issueLines(saved.error),
      );
    }
    routes = saved.data.routes;
    revision = saved.data.revision;
  }
  const parsed = RoutingRules.min(1, 'a routing needs at least one route')
    .superRefine((rules, ctx) => refuseUnmatchableHosts(rules, ctx, []))
    .safeParse(routes);
  if (!parsed.success)
    throw new InputError(`${source} holds routes the API would refuse`, issueLines(parsed.error, 'routes'));
  // As the API stores them (a name's trailing dot dropped): compared with the stored routing, a file with
  // `shop.example.` read as a change on every apply.
  return { routes: withoutTrailingDots(parsed.data), revision };
}
