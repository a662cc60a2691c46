import { describe, expect, it } from 'vitest';
import { siteListing } from './cooldown-sites.js';
import { GLOBAL_TARGET } from './model.js';

const full = Array.from({ length: 3 }, (_, i) => `s${i}.example`);

describe('siteListing', () => {
  it.each([
    // The proxy-wide cooldown and the lease's own site are never capped, whatever the list holds.
    { site: GLOBAL_TARGET, lease: null, listed: full, listing: 'exempt' },
    { site: GLOBAL_TARGET, lease: 'shop.example', listed: full, listing: 'exempt' },
    { site: 'shop.example', lease: 'shop.example:8443', listed: full, listing: 'exempt' },
    { site: '[2001:db8::1]', lease: '[2001:db8::1]:443', listed: full, listing: 'exempt' },
    // Any other site is listed, added while there is room, capped past it.
    { site: 's1.example', lease: null, listed: full, listing: 'listed' },
    { site: 'new.example', lease: null, listed: full, listing: 'capped' },
    { site: 'new.example', lease: 'shop.example', listed: full.slice(1), listing: 'add' },
    // A list written before the exemptions may name them: they take no room.
    {
      site: 'new.example',
      lease: 'shop.example',
      listed: [...full.slice(1), '*', 'shop.example'],
      listing: 'add',
    },
  ])('$site on a lease for $lease, $listed listed → $listing', ({ site, lease, listed, listing }) => {
    expect(siteListing(site, lease, listed, 3)).toBe(listing);
  });
});
