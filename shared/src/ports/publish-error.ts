// How a publish through any of the publisher ports fails.
//   invalid_payload: the message does not fit its schema (a bug; retrying cannot help)
//   unavailable:     Pub/Sub refused or failed it: not sent
//   unconfirmed:     no confirmation within the publisher's deadline. The client library keeps the message
//                    and may still send it (it retries for up to 10 minutes): a caller that publishes
//                    again at once, taking it for unsent, multiplies what goes out when Pub/Sub recovers.
export class PublishError extends Error {
  constructor(
    readonly kind: 'invalid_payload' | 'unavailable' | 'unconfirmed',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PublishError';
  }
}

/** Whether a failed publish may still reach its subscribers (PublishError `unconfirmed`). */
export const mayStillBeSent = (err: unknown): boolean =>
  err instanceof PublishError && err.kind === 'unconfirmed';
