import { describe, expect, it } from 'vitest';
import { classifyInstances, type ListedInstance } from './orphans.js';

const now = new Date('2026-01-01T01:00:00Z');
const minutesAgo = (m: number) => new Date(now.getTime() - m * 60_000);
const inst = (labels: Record<string, string>, createdAt: Date | null): ListedInstance => ({
  providerId: 'zones/z/instances/i',
  labels,
  createdAt,
});

describe('classifyInstances (seed §8)', () => {
  const live = new Set(['live-uid', 'deleting-uid']);
  it.each<[string, ListedInstance, boolean, string | undefined]>([
    [
      'an old labelled instance with no live proxy is deleted',
      inst({ 'proxyplane-uid': 'gone' }, minutesAgo(11)),
      true,
      undefined,
    ],
    ['an unlabelled instance is never touched', inst({}, minutesAgo(60)), false, 'no_ownership_label'],
    [
      'a young orphan may be mid-create',
      inst({ 'proxyplane-uid': 'gone' }, minutesAgo(9)),
      false,
      'too_young',
    ],
    ['an instance of unknown age is kept', inst({ 'proxyplane-uid': 'gone' }, null), false, 'unknown_age'],
    ['a live proxy instance is kept', inst({ 'proxyplane-uid': 'live-uid' }, minutesAgo(60)), false, 'live'],
    [
      'a proxy being deleted still counts as live',
      inst({ 'proxyplane-uid': 'deleting-uid' }, minutesAgo(60)),
      false,
      'live',
    ],
  ])('%s', (_n, instance, del, keep) => {
    const [v] = classifyInstances([instance], live, now);
    expect(v?.delete).toBe(del);
    expect(v?.keep).toBe(keep);
  });

  it('honours a custom MinAge', () => {
    const [v] = classifyInstances(
      [inst({ 'proxyplane-uid': 'gone' }, minutesAgo(2))],
      new Set(),
      now,
      60_000,
    );
    expect(v?.delete).toBe(true);
  });
});
