import { describe, expect, it } from 'vitest';
import { externalSpec, managedSpec } from '../testing/proxy-fixtures.js';
import { lacksBootSource } from './managed-boot.js';

const bare = () => managedSpec();
const ref = { secret: 'proxy-creds-default', version: 'latest' };

describe('a managed spec that could never boot', () => {
  it.each([
    ['managed, neither credentialsRef nor cloudInit', bare(), undefined, true],
    ['managed with credentialsRef', { ...bare(), credentialsRef: ref }, undefined, false],
    ['managed with inline cloud-init', { ...bare(), cloudInit: { inline: '#!/bin/sh\n' } }, undefined, false],
    ['managed with cloud-init from a secret', { ...bare(), cloudInit: { secretRef: ref } }, undefined, false],
    ['external', externalSpec(), undefined, false],
    ['an edit that drops the credentials', bare(), { ...bare(), credentialsRef: ref }, true],
    ['an edit of a proxy stored without them', { ...bare(), capacity: 9 }, bare(), false],
  ])('%s → %s', (_l, next, current, expected) => {
    expect(lacksBootSource(next as never, current as never)).toBe(expected);
  });
});
