// How plain HTTP reaches one upstream (docs/gateway.md § Plain HTTP). `pinned`: a CONNECT to the address
// the SSRF guard checked, so the upstream never resolves the name again (DNS rebinding cannot steer it).
// `absolute-uri`: the request in absolute form with the host name, which lets the upstream reuse its
// connections to the target and the gateway keep its own to the upstream alive — safe only when the
// upstream refuses private destinations itself, which the snapshot says per proxy (filtersDestinations).

/** GATEWAY_PLAIN_HTTP: `auto` follows the snapshot; the other two override it for every upstream. */
export const PLAIN_HTTP_SETTINGS = ['auto', 'pinned', 'absolute-uri'] as const;
export type PlainHttpSetting = (typeof PLAIN_HTTP_SETTINGS)[number];

/**
 * True when plain HTTP goes to the upstream in absolute form. An explicit setting wins (an operator who
 * knows every upstream of the deployment filters, or who wants the pinned form everywhere); `auto` uses
 * absolute form only for upstreams the control plane marked as filtering (absent = false).
 */
export function absoluteUriFor(setting: PlainHttpSetting, filtersDestinations: boolean | undefined): boolean {
  if (setting === 'pinned') return false;
  if (setting === 'absolute-uri') return true;
  return filtersDestinations === true;
}
