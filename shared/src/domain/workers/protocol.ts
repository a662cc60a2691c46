// Contract §7: registration carries supported_protocol_version; an incompatible worker is refused, never
// silently downgraded. Versions are integers; the controller speaks a closed range.

export const ControllerProtocol = { min: 1, max: 1 } as const;

export type ProtocolCheck =
  | { ok: true; version: number }
  | { ok: false; error: 'unsupported_protocol_version' };

/** The worker sends the highest version it supports; we speak it if it is in our range. */
export function negotiateProtocol(supported: number): ProtocolCheck {
  if (
    !Number.isInteger(supported) ||
    supported < ControllerProtocol.min ||
    supported > ControllerProtocol.max
  ) {
    return { ok: false, error: 'unsupported_protocol_version' };
  }
  return { ok: true, version: supported };
}
