// Checks on the path parameters every call shares, with GCE's answers: an unknown project is 404, an
// unknown zone 400 "Unknown zone", a malformed instance name 400, a missing instance 404.
import { invalidField, NAME_OR_ID, NAME_OR_ID_REGEX_TEXT, notFound } from './errors.js';
import { type InstanceRecord, instanceKey } from './instance.js';
import { instancePath, projectPath } from './links.js';
import type { EmulatorState } from './state.js';

export function checkProject(state: EmulatorState, project: string): void {
  if (state.projectId !== undefined && project !== state.projectId) throw notFound(projectPath(project));
}

export function checkZone(state: EmulatorState, project: string, zone: string): void {
  checkProject(state, project);
  if (!state.zoneSet.has(zone)) throw invalidField('zone', zone, 'Unknown zone.');
}

/** By name or by numeric id, as instances.get accepts either. */
export function findInstance(
  state: EmulatorState,
  project: string,
  zone: string,
  nameOrId: string,
): InstanceRecord {
  checkZone(state, project, zone);
  if (!NAME_OR_ID.test(nameOrId)) {
    throw invalidField('instance', nameOrId, `Must be a match of regex '${NAME_OR_ID_REGEX_TEXT}'`);
  }
  const byName = state.instances.get(instanceKey(project, zone, nameOrId));
  if (byName) return byName;
  if (/^\d+$/.test(nameOrId)) {
    for (const record of state.instances.values()) {
      if (record.id === nameOrId && record.project === project && record.zone === zone) return record;
    }
  }
  throw notFound(instancePath(project, zone, nameOrId));
}
