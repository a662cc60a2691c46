// How a probe through a proxy failed: the stage (contract §5's outcome stages, plus BODY) and a stable
// code — an errno, a status, a SOCKS reply — never an error message with addresses or secrets in it.

export type ProbeStage = 'DIAL' | 'PROXY_HANDSHAKE' | 'RESPONSE_HEADERS' | 'BODY';

export class ProbeFailure extends Error {
  constructor(
    readonly stage: ProbeStage,
    readonly code: string,
  ) {
    super(`${stage}: ${code}`);
  }
}

/**
 * The failure code of a socket or request error. `timeout` whenever the probe's own deadline has fired,
 * whatever the abort surfaced as: Node reports a request aborted by its signal as an AbortError
 * (`ABORT_ERR`) and a response cut mid-body as ECONNRESET — neither says "timeout" by itself. `cancelled`
 * when the caller ended it first (ProbeOptions.cancel).
 */
export function errorCode(err: unknown, deadline: AbortSignal): string {
  if (deadline.aborted)
    return (deadline.reason as Error | undefined)?.name === 'TimeoutError' ? 'timeout' : 'cancelled';
  if (err instanceof Error && err.name === 'TimeoutError') return 'timeout';
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' ? code.toLowerCase() : 'error';
}
