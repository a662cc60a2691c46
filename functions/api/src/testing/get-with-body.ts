import { request } from 'node:http';

/**
 * A GET with a body, sent over a socket to a server on 127.0.0.1 with a bearer token: a Fetch Request
 * cannot carry one (app.request() throws), a client on the wire can. Resolves the status and the text.
 */
export function getWithBody(opts: {
  port: number;
  path: string;
  token: string;
  body: string;
}): Promise<{ status: number; text: string }> {
  const { port, path, token, body } = opts;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'GET',
        path,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
