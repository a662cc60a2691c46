// docs/cli.md's proxy file, as a new user copies it into proxy.yaml: it passes the CLI's own check (the
// API's schemas) and names the proxies the docs say; and the file with mistakes the page shows next gets
// the lines it shows.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeFailure } from './hints.js';
import { parseProxyFile } from './proxy-file.js';
import { staleFileError, staleness } from './saved-from.js';

const doc = readFileSync(new URL('../docs/cli.md', import.meta.url), 'utf8');
const block = (lang: string) =>
  [...doc.matchAll(new RegExp(`\`\`\`${lang}\\n(.*?)\`\`\``, 'gs'))].map((m) => m[1] ?? '');

describe('docs/cli.md', () => {
  it('its proxy file is valid and creates edge-eu-1 and partner-1', () => {
    const [yaml] = block('yaml');
    expect(parseProxyFile(yaml ?? '', 'proxy.yaml').map((p) => p.name)).toEqual(['edge-eu-1', 'partner-1']);
  });

  it('its error example is what the CLI says for a second document with a bad name and zone', () => {
    const [yaml = ''] = block('yaml');
    const broken = yaml
      .replace('name: partner-1', 'name: Partner_1')
      .replace(
        /mode: external\n {2}endpoint: .*\n/,
        'mode: managed\n  zone: europe\n  credentialsRef: { secret: proxy-creds-default }\n',
      );
    const shown = block('text').find((t) => t.startsWith('error: invalid_input'));
    let lines: string[] = [];
    try {
      parseProxyFile(broken, 'fleet.yaml');
    } catch (err) {
      lines = describeFailure(err).lines;
    }
    expect(lines.join('\n')).toBe(shown?.trimEnd());
  });

  it('its stale-file example is what apply says of a file saved at generation 4 of a proxy now at 5', () => {
    const why = staleness('edge-eu-1', { uid: 'u', generation: 4 }, { uid: 'u', generation: 5 });
    const shown = block('text').find((t) => t.startsWith('error: precondition_failed'));
    const { lines } = describeFailure(staleFileError('p.yaml', [`p.yaml: ${why}`], 'nothing was applied'));
    expect(lines.join('\n')).toBe(shown?.trimEnd());
  });
});
