/** Open sockets by kind: exposed on /healthz and /metrics so tests can see that nothing leaks. */
export interface SocketCounts {
  proxyClients: number;
  upstreams: number;
  httpClients: number;
}

export const newSocketCounts = (): SocketCounts => ({ proxyClients: 0, upstreams: 0, httpClients: 0 });
