// zoneOperations.get and .wait. `wait` blocks until the operation is DONE or about two minutes have
// passed (then returns it unfinished, as GCE does), and stops waiting when the caller goes away.
import { notFound } from './errors.js';
import { operationPath } from './links.js';
import { type OperationRecord, toOperationResource } from './operations.js';
import { checkZone } from './scope.js';
import type { EmulatorState } from './state.js';

function findOperation(state: EmulatorState, project: string, zone: string, name: string): OperationRecord {
  checkZone(state, project, zone);
  const op = state.ops.get(project, zone, name);
  if (!op) throw notFound(operationPath(project, zone, name));
  return op;
}

export function getOperation(state: EmulatorState, project: string, zone: string, name: string) {
  return toOperationResource(findOperation(state, project, zone, name));
}

export async function waitOperation(
  state: EmulatorState,
  project: string,
  zone: string,
  name: string,
  signal: AbortSignal,
) {
  const op = findOperation(state, project, zone, name);
  await state.ops.wait(op, state.waitTimeoutMs, signal);
  return toOperationResource(op);
}
