// Runs one forward proxy on its own:
//   node --import tsx emulators/forward-proxy/main.ts --host 127.0.0.1 --port 3128 [--user u --pass p]
//     [--protocol http|socks5] [--connect-ports any|443,8443]
// Without --user/--pass it is an open proxy. --connect-ports limits the ports CONNECT may reach (403
// Forbidden otherwise, as a managed VM's squid answers); its default is `any`, since a proxy started on
// its own has no VM configuration to follow (an emulated VM takes its list from its startup script).
// Logs are one JSON object per line.
import { parseArgs } from 'node:util';
import { parseConnectPortsFlag } from './connect-ports.js';
import { createForwardProxy } from './proxy.js';

function parseProxyArgs(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '3128' },
      user: { type: 'string' },
      pass: { type: 'string' },
      protocol: { type: 'string', default: 'http' },
      'connect-ports': { type: 'string', default: 'any' },
    },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid --port ${values.port}`);
  if ((values.user === undefined) !== (values.pass === undefined))
    throw new Error('--user and --pass go together');
  const credentials = values.user === undefined ? null : `${values.user}:${values.pass}`;
  const protocol = values.protocol;
  if (protocol !== 'http' && protocol !== 'socks5') throw new Error(`invalid --protocol ${protocol}`);
  const connectPorts = parseConnectPortsFlag(values['connect-ports']);
  return { host: values.host, port, credentials, protocol, connectPorts } as const;
}

async function main(): Promise<void> {
  const args = parseProxyArgs(process.argv.slice(2));
  const proxy = createForwardProxy({
    ...args,
    log: (severity, message, fields) =>
      process.stdout.write(
        `${JSON.stringify({ severity, message, component: 'forward-proxy', ...fields })}\n`,
      ),
  });
  const { host, port } = await proxy.listen();
  process.stdout.write(
    `${JSON.stringify({ severity: 'INFO', message: 'forward proxy listening', url: `${args.protocol}://${host}:${port}`, auth: args.credentials !== null, connectPorts: proxy.connectPorts ?? 'any' })}\n`,
  );
  const stop = () => {
    proxy.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`${JSON.stringify({ severity: 'ERROR', message: String(err) })}\n`);
  process.exit(1);
});
