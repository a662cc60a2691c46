// One Compute API request: route → count → body → injected error → the operation → JSON. Every failure
// leaves as a GCE error body; anything unexpected is logged and answered 500 backendError, so no
// input can take the emulator down.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { matchApiRoute } from './api-router.js';
import { backendError, GceError, injectedError, methodNotAllowed, urlNotFound } from './errors.js';
import { parseJsonBody, readBody, sendGceError, sendJson } from './http-io.js';
import { deleteInstance, getInstance, insertInstance, startInstance, stopInstance } from './instances-api.js';
import { aggregatedListInstances, listInstances } from './listing.js';
import { toOperationResource } from './operations.js';
import { getOperation, listOperations, waitOperation } from './operations-api.js';
import type { EmulatorState } from './state.js';

export async function handleApiRequest(
  state: EmulatorState,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const method = req.method ?? 'GET';
  const match = matchApiRoute(method, url.pathname);
  if (match.kind === 'none') return sendGceError(res, urlNotFound(url.pathname));
  if (match.kind === 'method')
    return sendGceError(res, methodNotAllowed(method, url.pathname, match.allowed));
  const { operation, params } = match;
  state.counters[operation]++;
  let body: Buffer | null = null;
  try {
    if (method === 'POST') body = await readBody(req);
  } catch (err) {
    if (err instanceof GceError) sendGceError(res, err, true);
    else res.destroy();
    return;
  }
  try {
    const injected = state.faults.takeError(operation);
    if (injected !== null) throw injectedError(injected);
    const [project = '', zone = '', name = ''] = params;
    const requestId = url.searchParams.get('requestId');
    const q = url.searchParams;
    switch (operation) {
      case 'insert':
        return sendJson(
          res,
          200,
          toOperationResource(insertInstance(state, project, zone, parseJsonBody(body!), requestId)),
        );
      case 'get':
        return sendJson(res, 200, getInstance(state, project, zone, name));
      case 'list':
        return sendJson(res, 200, listInstances(state, project, zone, q));
      case 'aggregatedList':
        return sendJson(res, 200, aggregatedListInstances(state, project, q));
      case 'delete':
        return sendJson(res, 200, toOperationResource(deleteInstance(state, project, zone, name, requestId)));
      case 'stop':
        return sendJson(res, 200, toOperationResource(stopInstance(state, project, zone, name, requestId)));
      case 'start':
        return sendJson(res, 200, toOperationResource(startInstance(state, project, zone, name, requestId)));
      case 'operationsGet':
        return sendJson(res, 200, getOperation(state, project, zone, name));
      case 'operationsList':
        return sendJson(res, 200, listOperations(state, project, zone, q));
      case 'operationsWait': {
        const gone = new AbortController();
        res.once('close', () => gone.abort());
        return sendJson(res, 200, await waitOperation(state, project, zone, name, gone.signal));
      }
    }
  } catch (err) {
    if (err instanceof GceError) return sendGceError(res, err);
    state.log('ERROR', 'compute emulator request failed', { path: url.pathname, error: String(err) });
    sendGceError(res, backendError(500));
  }
}
