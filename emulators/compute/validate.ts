// Validation of instances.insert bodies, in GCE's terms: every problem found is reported (GCE lists
// several in `errors[]`), each as `Invalid value for field 'resource.x': '…'. <why>` (reason
// `invalid`) or `Required field 'resource.x' not specified` (reason `required`).
// Limits: https://cloud.google.com/compute/docs/naming-resources, /labeling-resources, /metadata/setting-custom-metadata
import {
  combine,
  type GceError,
  invalidField,
  RESOURCE_NAME,
  RESOURCE_NAME_REGEX_TEXT,
  requiredField,
} from './errors.js';
import type { AccessConfigSpec, DiskSpec, InstanceSpec, MetadataItem, NicSpec } from './instance-spec.js';
import { link, projectPath } from './links.js';
import { checkMachineType } from './machine-types.js';

const LABEL_KEY = /^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$/u;
const LABEL_VALUE = /^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$/u;
const METADATA_KEY = /^[a-zA-Z0-9_-]{1,128}$/;
const METADATA_TOTAL_BYTES = 512 * 1024;
const METADATA_VALUE_BYTES = 256 * 1024;
const MAX_LABELS = 64;
const MAX_TAGS = 64;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const show = (v: unknown) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));

class Problems {
  readonly list: GceError[] = [];
  invalid(field: string, value: unknown, detail: string): void {
    this.list.push(invalidField(`resource.${field}`, show(value), detail));
  }
  required(field: string): void {
    this.list.push(requiredField(`resource.${field}`));
  }
  /** Records the problem and yields the fallback the caller continues with. */
  reject<T>(fallback: T, field: string, value: unknown, detail: string): T {
    this.invalid(field, value, detail);
    return fallback;
  }
}

function optionalString(p: Problems, body: Json, field: string): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') p.invalid(field, v, 'Must be a string.');
  return typeof v === 'string' ? v : undefined;
}

function labels(p: Problems, raw: unknown): Record<string, string> {
  if (raw === undefined || raw === null) return {};
  if (!isObject(raw)) return p.reject({}, 'labels', raw, 'Must be a map of strings.');
  const out: Record<string, string> = {};
  const entries = Object.entries(raw);
  if (entries.length > MAX_LABELS) p.invalid('labels', '', `At most ${MAX_LABELS} labels are allowed.`);
  for (const [key, value] of entries) {
    if (!LABEL_KEY.test(key)) {
      p.invalid(
        'labels',
        '',
        `Label key '${key}' violates format constraints. The key must start with a lowercase character, can only contain lowercase letters, numeric characters, underscores and dashes. The key can be at most 63 characters long. International characters are allowed.`,
      );
    } else if (typeof value !== 'string' || !LABEL_VALUE.test(value)) {
      p.invalid(
        'labels',
        '',
        `Label value '${show(value)}' violates format constraints. The value can only contain lowercase letters, numeric characters, underscores and dashes. The value can be at most 63 characters long. International characters are allowed.`,
      );
    } else out[key] = value;
  }
  return out;
}

function tags(p: Problems, raw: unknown): string[] {
  if (raw === undefined || raw === null) return [];
  const items = isObject(raw) ? raw.items : raw;
  if (items === undefined || items === null) return [];
  if (!Array.isArray(items)) return p.reject([], 'tags.items', items, 'Must be a list of strings.');
  if (items.length > MAX_TAGS) p.invalid('tags.items', '', `At most ${MAX_TAGS} tags are allowed.`);
  for (const [i, tag] of items.entries()) {
    if (typeof tag !== 'string' || !RESOURCE_NAME.test(tag)) {
      p.invalid(`tags.items[${i}]`, tag, `Must be a match of regex '${RESOURCE_NAME_REGEX_TEXT}'`);
    }
  }
  return [...new Set(items.filter((t): t is string => typeof t === 'string'))];
}

function metadata(p: Problems, raw: unknown): MetadataItem[] {
  if (raw === undefined || raw === null) return [];
  const items = isObject(raw) ? raw.items : undefined;
  if (items === undefined || items === null) return [];
  if (!Array.isArray(items)) return p.reject([], 'metadata.items', items, 'Must be a list.');
  const out: MetadataItem[] = [];
  const seen = new Set<string>();
  let total = 0;
  for (const [i, item] of items.entries()) {
    const key = isObject(item) ? item.key : undefined;
    const value = isObject(item) ? (item.value ?? '') : undefined;
    if (typeof key !== 'string' || !METADATA_KEY.test(key)) {
      p.invalid(`metadata.items[${i}].key`, key ?? '', "Must be a match of regex '[a-zA-Z0-9-_]{1,128}'");
      continue;
    }
    if (typeof value !== 'string') {
      p.invalid(`metadata.items[${i}].value`, value, 'Must be a string.');
      continue;
    }
    if (seen.has(key)) {
      p.invalid('metadata', '', `Duplicate metadata key '${key}'.`);
      continue;
    }
    if (Buffer.byteLength(value) > METADATA_VALUE_BYTES) {
      p.invalid(`metadata.items[${i}].value`, '', `Metadata value exceeds ${METADATA_VALUE_BYTES} bytes.`);
      continue;
    }
    seen.add(key);
    total += Buffer.byteLength(key) + Buffer.byteLength(value);
    out.push({ key, value });
  }
  if (total > METADATA_TOTAL_BYTES)
    p.invalid('metadata', '', `Metadata exceeds the ${METADATA_TOTAL_BYTES} byte limit.`);
  return out;
}

function disks(p: Problems, raw: unknown, name: string, project: string, zone: string): DiskSpec[] {
  if (raw === undefined || raw === null || (Array.isArray(raw) && raw.length === 0)) {
    p.required('disks');
    return [];
  }
  if (!Array.isArray(raw)) return p.reject([], 'disks', raw, 'Must be a list.');
  const out: DiskSpec[] = [];
  for (const [i, disk] of raw.entries()) {
    if (!isObject(disk)) {
      p.invalid(`disks[${i}]`, disk, 'Must be an object.');
      continue;
    }
    const init = isObject(disk.initializeParams) ? disk.initializeParams : {};
    const sourceImage =
      typeof init.sourceImage === 'string' && init.sourceImage ? init.sourceImage : undefined;
    const source = typeof disk.source === 'string' && disk.source ? disk.source : undefined;
    const boot = disk.boot === true || (i === 0 && disk.boot === undefined);
    if (boot && i !== 0) p.invalid(`disks[${i}].boot`, 'true', 'The boot disk must be the first disk.');
    if (boot && !sourceImage && !source) p.required(`disks[${i}].initializeParams.sourceImage`);
    if (
      sourceImage &&
      !/(?:^|\/)global\/images\/(?:family\/)?[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$/.test(sourceImage)
    ) {
      p.invalid(
        `disks[${i}].initializeParams.sourceImage`,
        sourceImage,
        'Must be a URL or partial URL of an image or image family.',
      );
    }
    const diskName =
      typeof init.diskName === 'string' && init.diskName ? init.diskName : i === 0 ? name : `${name}-${i}`;
    if (!RESOURCE_NAME.test(diskName)) {
      p.invalid(
        `disks[${i}].initializeParams.diskName`,
        diskName,
        `Must be a match of regex '${RESOURCE_NAME_REGEX_TEXT}'`,
      );
    }
    const size = init.diskSizeGb ?? '10';
    if (!/^\d{1,5}$/.test(String(size)) || Number(size) < 10) {
      p.invalid(`disks[${i}].initializeParams.diskSizeGb`, size, 'Must be an integer of at least 10.');
    }
    out.push({
      boot,
      autoDelete: disk.autoDelete !== false,
      deviceName: typeof disk.deviceName === 'string' ? disk.deviceName : `persistent-disk-${i}`,
      diskName,
      diskSizeGb: String(size),
      sourceImage,
      source: source ?? link(`${projectPath(project)}/zones/${zone}/disks/${diskName}`),
    });
  }
  if (out.length > 0 && !out.some((d) => d.boot)) p.invalid('disks', '', 'Boot disk must be specified.');
  return out;
}

function networkInterfaces(p: Problems, raw: unknown, project: string): NicSpec[] {
  if (raw === undefined || raw === null || (Array.isArray(raw) && raw.length === 0)) {
    p.required('networkInterfaces');
    return [];
  }
  if (!Array.isArray(raw)) return p.reject([], 'networkInterfaces', raw, 'Must be a list.');
  return raw.map((nic, i): NicSpec => {
    const n = isObject(nic) ? nic : {};
    if (!isObject(nic)) p.invalid(`networkInterfaces[${i}]`, nic, 'Must be an object.');
    const configs = Array.isArray(n.accessConfigs) ? n.accessConfigs : [];
    if (configs.length > 1)
      p.invalid(`networkInterfaces[${i}].accessConfigs`, '', 'At most one access config is allowed.');
    const accessConfigs = configs.map(
      (c): AccessConfigSpec => ({
        name: isObject(c) && typeof c.name === 'string' ? c.name : 'External NAT',
        type: isObject(c) && typeof c.type === 'string' ? c.type : 'ONE_TO_ONE_NAT',
        networkTier: isObject(c) && typeof c.networkTier === 'string' ? c.networkTier : 'PREMIUM',
      }),
    );
    const network = typeof n.network === 'string' && n.network ? n.network : 'global/networks/default';
    return {
      network: network.startsWith('https://')
        ? network
        : link(network.startsWith('projects/') ? network : `${projectPath(project)}/${network}`),
      subnetwork: typeof n.subnetwork === 'string' ? n.subnetwork : undefined,
      accessConfigs,
    };
  });
}

/** The normalised spec, or one GceError listing every problem. */
export function validateInsert(body: unknown, project: string, zone: string): InstanceSpec {
  const p = new Problems();
  if (!isObject(body)) {
    throw invalidField('resource', show(body), 'The request body must be an Instance object.');
  }
  const name = optionalString(p, body, 'name');
  if (name === undefined) p.required('name');
  else if (!RESOURCE_NAME.test(name))
    p.invalid('name', name, `Must be a match of regex '${RESOURCE_NAME_REGEX_TEXT}'`);
  const machineTypeRaw = optionalString(p, body, 'machineType');
  let machineType = '';
  if (machineTypeRaw === undefined) p.required('machineType');
  else {
    const check = checkMachineType(machineTypeRaw, project, zone);
    if (check.ok) machineType = check.url;
    else p.invalid('machineType', machineTypeRaw, check.detail);
  }
  const spec: InstanceSpec = {
    name: name ?? '',
    description: optionalString(p, body, 'description') ?? '',
    machineType,
    labels: labels(p, body.labels),
    tags: tags(p, body.tags),
    metadata: metadata(p, body.metadata),
    disks: disks(p, body.disks, name ?? 'instance', project, zone),
    networkInterfaces: networkInterfaces(p, body.networkInterfaces, project),
    scheduling: scheduling(body.scheduling),
    serviceAccounts: serviceAccounts(body.serviceAccounts),
    deletionProtection: body.deletionProtection === true,
  };
  if (p.list.length > 0) throw combine(p.list);
  return spec;
}

function scheduling(raw: unknown): InstanceSpec['scheduling'] {
  const s = isObject(raw) ? raw : {};
  const spot = s.provisioningModel === 'SPOT';
  const preemptible = s.preemptible === true || spot;
  return {
    preemptible,
    automaticRestart: preemptible ? false : s.automaticRestart !== false,
    onHostMaintenance: preemptible
      ? 'TERMINATE'
      : typeof s.onHostMaintenance === 'string'
        ? s.onHostMaintenance
        : 'MIGRATE',
    provisioningModel: spot ? 'SPOT' : 'STANDARD',
  };
}

function serviceAccounts(raw: unknown): InstanceSpec['serviceAccounts'] {
  if (!Array.isArray(raw)) return [];
  return raw.filter(isObject).map((sa) => ({
    email: typeof sa.email === 'string' ? sa.email : 'default',
    scopes: Array.isArray(sa.scopes) ? sa.scopes.filter((s): s is string => typeof s === 'string') : [],
  }));
}
