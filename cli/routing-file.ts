// `routing apply -f FILE`: a YAML or JSON file of the gateways' ordered routes — what `routing get -o yaml`
// prints (its `revision` says which routing it was saved from; the plane's other fields are dropped), or
// `{routes: [...]}` / a bare list written by hand. Checked against the routing schema the API stores
// (shared/src/messages/gateway-snapshot.ts RoutingRules) before anything is sent; the API checks the rest
// (selector keys, the number of target checks).
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { RoutingRules } from '../shared/src/messages/gateway-snapshot.js';
import type { Io } from './context.js';
import { InputError } from './errors.js';

const MAX_BYTES = 1024 * 1024;

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
  const source = file === '-' ? 'stdin' : file;
  const text = await (file === '-' ? io.readStdin() : io.readFile(file)).catch((err: unknown) => {
    const code = (err as { code?: unknown } | null)?.code;
    throw new InputError(`cannot read ${source}: ${typeof code === 'string' ? code : 'read failed'}`, [], {
      cause: err,
    });
  });
  return parseRoutingFile(text, source);
}

export function parseRoutingFile(text: string, source: string): RoutingFile {
  if (Buffer.byteLength(text) > MAX_BYTES) throw new InputError(`${source} is over 1 MiB`);
  const docs = parseAllDocuments(text, { uniqueKeys: true });
  const list = (Array.isArray(docs) ? docs : [docs]).filter((d) => d.contents !== null);
  if (list.length !== 1) {
    throw new InputError(`${source} must hold one routing (${list.length} YAML documents found)`);
  }
  const doc = list[0]!;
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const line = e.linePos?.[0] ? ` line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '';
    throw new InputError(`${source} is not valid YAML or JSON:${line} ${e.message.split('\n')[0]}`);
  }
  let value: unknown;
  try {
    // No alias expansion at all ("billion laughs"): a routing file has no use for aliases.
    value = doc.toJS({ maxAliasCount: 0 });
  } catch (err) {
    throw new InputError(`${source} is not valid YAML or JSON: ${(err as Error).message}`, [], {
      cause: err,
    });
  }
  let routes: unknown = value;
  let revision: number | undefined;
  if (!Array.isArray(value)) {
    const saved = SavedRouting.safeParse(value);
    if (!saved.success) {
      throw new InputError(
        `${source} is not a routing: a list of routes, or {routes: [...]}`,
        issues(saved.error),
      );
    }
    routes = saved.data.routes;
    revision = saved.data.revision;
  }
  const parsed = RoutingRules.min(1, 'a routing needs at least one route').safeParse(routes);
  if (!parsed.success)
    throw new InputError(`${source} holds routes the API would refuse`, issues(parsed.error, 'routes'));
  return { routes: parsed.data, revision };
}

function issues(error: z.ZodError, prefix?: string): string[] {
  return error.issues.slice(0, 20).map((issue) => {
    const path = [...(prefix ? [prefix] : []), ...issue.path].join('.') || '(top level)';
    const msg =
      issue.code === 'unrecognized_keys' ? `unknown field(s) ${issue.keys.join(', ')}` : issue.message;
    return `${path}: ${msg}`;
  });
}
