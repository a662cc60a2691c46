// biome-ignore-all lint/suspicious/noTemplateCurlyInString: Terraform expressions parse to "${…}" strings.
// The log-based metrics (terraform/monitoring.tf) read jsonPayload fields by name; nothing but a test says
// when a line stops carrying one: Cloud Logging counts nothing, and the alert on it stays silent (or, for
// the stale-gateway absence condition, fires for good). Here every field a metric filters on or extracts
// is checked against the contract the emitters' own tests hold their lines to
// (shared/src/testing/log-contract.ts), and the operator's copy of it in docs/operations.md against both.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { LOG_CONTRACT, missingContractFields } from '../../shared/src/testing/log-contract.js';
import { type Block, loadModule, type TfConfig } from './support/hcl.js';
import { repoRoot, terraformDir } from './support/paths.js';

let tf: TfConfig;
beforeAll(async () => {
  tf = await loadModule(terraformDir);
});

interface Counted {
  metric: string;
  event: string;
  /** Every jsonPayload field the metric reads besides `event`. */
  fields: string[];
}

/** Every jsonPayload field named in the text, a nested one by its path (`outcomes.noUpstream`). */
const payloadFields = (text: string) => [...text.matchAll(/jsonPayload\.(\w+(?:\.\w+)*)/g)].map((m) => m[1]!);

/** The event a filter selects: exactly `jsonPayload.event="…"`, and nothing else for now. */
function eventOf(filter: string): string | undefined {
  return /^jsonPayload\.event="([^"]+)"$/.exec(filter)?.[1];
}

/** Each log-based metric, with the `for_each` counters expanded from local.log_counters. */
function countedLines(): Counted[] {
  const metrics = (tf.resource.google_logging_metric ?? {}) as Record<string, Block>;
  const out: Counted[] = [];
  for (const [name, m] of Object.entries(metrics)) {
    const filter = String(m.filter);
    if (m.for_each === '${local.log_counters}') {
      // The expansion this test relies on: the event in the filter, each label extracted from its field.
      expect(filter).toBe('jsonPayload.event="${each.value.event}"');
      expect(m.label_extractors).toBe(
        '${{ for key, field in each.value.labels : key => "EXTRACT(${field})" }}',
      );
      expect(m.value_extractor).toBeUndefined();
      const counters = tf.locals.log_counters as Record<
        string,
        { event: string; labels: Record<string, string> }
      >;
      for (const [key, c] of Object.entries(counters)) {
        const labels = Object.values(c.labels);
        for (const l of labels)
          expect(l, `${key}: a label is a jsonPayload field`).toMatch(/^jsonPayload\.\w+$/);
        out.push({ metric: `counter["${key}"]`, event: c.event, fields: payloadFields(labels.join(' ')) });
      }
      continue;
    }
    if (m.for_each === '${local.gateway_traffic}') {
      // One distribution per field of the traffic line, each by worker.
      expect(filter).toBe('jsonPayload.event="gateway.traffic"');
      expect(m.value_extractor).toBe('EXTRACT(${each.value.field})');
      const labels = Object.values((m.label_extractors ?? {}) as Record<string, string>);
      const traffic = tf.locals.gateway_traffic as Record<string, { field: string }>;
      for (const [key, t] of Object.entries(traffic)) {
        expect(t.field, `${key}: a value is a jsonPayload field`).toMatch(/^jsonPayload\.[\w.]+$/);
        out.push({
          metric: `${name}["${key}"]`,
          event: 'gateway.traffic',
          fields: payloadFields(`${t.field} ${labels.join(' ')}`),
        });
      }
      continue;
    }
    const event = eventOf(filter);
    expect(event, `${name}: filter ${filter}`).toBeDefined();
    const read = [
      filter.replace(/^jsonPayload\.event="[^"]+"/, ''),
      String(m.value_extractor ?? ''),
      ...Object.values((m.label_extractors ?? {}) as Record<string, string>),
    ].join(' ');
    out.push({ metric: name, event: event!, fields: payloadFields(read) });
  }
  return out;
}

describe('the log-based metrics read only what the code logs (shared/src/testing/log-contract.ts)', () => {
  it('each metric counts an event of the contract, and reads only fields the contract gives that event', () => {
    const counted = countedLines();
    expect(counted.length).toBeGreaterThanOrEqual(Object.keys(LOG_CONTRACT).length);
    for (const c of counted) {
      const promised = LOG_CONTRACT[c.event as keyof typeof LOG_CONTRACT] as readonly string[] | undefined;
      expect(promised, `${c.metric} counts ${c.event}, which no emitter promises`).toBeDefined();
      for (const f of c.fields) expect(promised, `${c.metric} reads jsonPayload.${f}`).toContain(f);
    }
  });

  it('every event of the contract is counted by some metric (so the list cannot rot)', () => {
    const events = new Set(countedLines().map((c) => c.event));
    expect(Object.keys(LOG_CONTRACT).filter((e) => !events.has(e))).toEqual([]);
  });

  it('the check sees a renamed field: a line without one of its fields, or of another event, is reported', () => {
    expect(missingContractFields({ event: 'gc.deleted', providerId: 'p', uid: 'u', zone: 'z' })).toEqual([]);
    expect(missingContractFields({ event: 'gc.deleted', providerId: 'p', uid: 'u', zoneName: 'z' })).toEqual([
      'zone',
    ]);
    expect(missingContractFields({ event: 'gc.removed' })).toEqual(['event gc.removed']);
    // null is a value (proxy.failed's detail may be): only an absent field is missing.
    expect(
      missingContractFields({ event: 'proxy.failed', proxy: 'p', failureReason: 'X', detail: null }),
    ).toEqual([]);
  });
});

describe('the operator reads the same contract', () => {
  it('docs/operations.md § The log contract lists exactly the contract events, each with its fields', () => {
    const ops = readFileSync(join(repoRoot, 'docs/operations.md'), 'utf8');
    const section = ops.split('### The log contract')[1]!.split('\n## ')[0]!;
    const rows = section.split('\n').filter((l) => /^\| `[a-z_]+\.[a-z_]+`/.test(l));
    const documented = new Map(
      rows.map((r) => {
        const cells = r.split('|').map((c) => c.trim());
        const names = [...cells[3]!.matchAll(/`(\w+(?:\.\w+)*)`/g)].map((m) => m[1]!);
        return [cells[1]!.replaceAll('`', ''), names] as const;
      }),
    );
    expect([...documented.keys()].sort()).toEqual(Object.keys(LOG_CONTRACT).sort());
    for (const [event, fields] of Object.entries(LOG_CONTRACT))
      expect(documented.get(event), event).toEqual(expect.arrayContaining([...fields]));
  });

  it("monitoring.tf's header lists each contract event with its fields", () => {
    const header = readFileSync(join(terraformDir, 'monitoring.tf'), 'utf8').split('\nlocals {')[0]!;
    for (const [event, fields] of Object.entries(LOG_CONTRACT)) {
      const entry = new RegExp(`^#\\s+${event.replace('.', '\\.')}\\s[^{]*\\{([^}]*)\\}`, 'm').exec(header);
      expect(entry, event).not.toBeNull();
      expect(entry![1]!.split(',').map((f) => f.trim())).toEqual([...fields]);
    }
  });
});

describe('the alert policies read what the log-based metrics have', () => {
  it('each condition on a log-based metric names one, and groups only by labels that metric extracts', () => {
    const counters = tf.locals.log_counters as Record<string, { labels: Record<string, string> }>;
    const metrics = (tf.resource.google_logging_metric ?? {}) as Record<string, Block>;
    const labelsOf = (ref: string): string[] | undefined => {
      const counter = /^google_logging_metric\.counter\["(\w+)"\]\.name$/.exec(ref)?.[1];
      if (counter) return counters[counter] && Object.keys(counters[counter].labels);
      const traffic = /^google_logging_metric\.(\w+)\["(\w+)"\]\.name$/.exec(ref);
      if (traffic) {
        const m = metrics[traffic[1]!];
        const fields = tf.locals.gateway_traffic as Record<string, unknown>;
        if (m?.for_each !== '${local.gateway_traffic}' || !(traffic[2]! in fields)) return undefined;
        return Object.keys((m.label_extractors ?? {}) as Record<string, string>);
      }
      const single = /^google_logging_metric\.(\w+)\.name$/.exec(ref)?.[1];
      const m = single ? metrics[single] : undefined;
      return m && Object.keys((m.label_extractors ?? {}) as Record<string, string>);
    };
    let checked = 0;
    for (const [name, policy] of Object.entries(tf.resource.google_monitoring_alert_policy ?? {})) {
      const conditions = (policy.conditions ?? []) as Block[];
      for (const c of conditions) {
        const body = ((c.condition_threshold ?? c.condition_absent) as Block[] | undefined)?.[0];
        // A ratio reads two metrics: the numerator (filter) and the denominator, each with its aggregations.
        const sides = [
          { filter: body?.filter, aggregations: body?.aggregations },
          { filter: body?.denominator_filter, aggregations: body?.denominator_aggregations },
        ];
        for (const side of sides) {
          const ref = /logging\.googleapis\.com\/user\/\$\{([^}]+)\}/.exec(String(side.filter ?? ''))?.[1];
          if (!ref) continue;
          const labels = labelsOf(ref);
          expect(labels, `${name}: ${ref} is not a log-based metric`).toBeDefined();
          for (const a of (side.aggregations ?? []) as Block[])
            for (const field of (a.group_by_fields ?? []) as string[]) {
              const label = /^metric\.label\.(\w+)$/.exec(field)?.[1];
              expect(labels, `${name} groups by ${field}`).toContain(label);
            }
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(12);
  });

  it('a ratio divides two metrics aligned and grouped alike, so each worker is divided by itself', () => {
    let ratios = 0;
    for (const [name, policy] of Object.entries(tf.resource.google_monitoring_alert_policy ?? {})) {
      for (const c of (policy.conditions ?? []) as Block[]) {
        const body = (c.condition_threshold as Block[] | undefined)?.[0];
        if (!body?.denominator_filter) continue;
        expect(body.denominator_aggregations, name).toEqual(body.aggregations);
        // A worker's lines of the window merged (ALIGN_SUM), then their mean (REDUCE_MEAN): the mean of a
        // field over the same lines as the mean of `requests`, so their ratio is the ratio of the sums.
        for (const a of body.aggregations as Block[]) {
          expect(a.per_series_aligner, name).toBe('ALIGN_SUM');
          expect(a.cross_series_reducer, name).toBe('REDUCE_MEAN');
          expect(a.group_by_fields, name).toEqual(['metric.label.worker']);
        }
        expect(String(body.denominator_filter)).toContain(
          'google_logging_metric.gateway_traffic["requests"]',
        );
        ratios++;
      }
    }
    expect(ratios).toBe(3);
  });
});
