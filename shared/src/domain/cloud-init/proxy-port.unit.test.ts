import { describe, expect, it } from 'vitest';
import { externalSpec, managedSpec } from '../../testing/proxy-fixtures.js';
import { reservedManagedPort } from './proxy-port.js';
import { renderDefaultCloudInit } from './startup-script.js';

const inline = { inline: '#!/bin/sh\n' };
const SECRET = 'projects/p/secrets/s';

describe('the port the default cloud-init cannot render', () => {
  it.each([
    ['managed on 22, default cloud-init', managedSpec({ port: 22 }), undefined, 22],
    ['managed on 3128', managedSpec(), undefined, null],
    ['managed on 22 with its own cloud-init', managedSpec({ port: 22, cloudInit: inline }), undefined, null],
    ['external on 22', externalSpec({ endpoint: { host: '203.0.113.7', port: 22 } }), undefined, null],
    ['an edit onto 22', managedSpec({ port: 22 }), managedSpec(), 22],
    [
      'an edit dropping the own cloud-init on 22',
      managedSpec({ port: 22 }),
      managedSpec({ port: 22, cloudInit: inline }),
      22,
    ],
    [
      'an edit of a proxy stored on 22',
      managedSpec({ port: 22, capacity: 9 }),
      managedSpec({ port: 22 }),
      null,
    ],
  ])('%s → %s', (_l, next, current, expected) => {
    expect(reservedManagedPort(next, current)).toBe(expected);
  });

  // One rule: whatever the API lets through with the default cloud-init, the renderer renders.
  it.each([1, 21, 22, 23, 80, 3128, 65535])(
    'port %i: the API refuses it exactly when the renderer does',
    (port) => {
      const refused = reservedManagedPort(managedSpec({ port }));
      const render = () => renderDefaultCloudInit({ port, credentialsSecret: SECRET });
      if (refused === null) expect(render).not.toThrow();
      else expect(render).toThrow(/sshd/);
    },
  );
});
