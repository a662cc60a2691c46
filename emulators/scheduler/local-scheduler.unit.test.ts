import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../shared/src/ports/clock.js';
import type { JobView, SchedulerJob } from './jobs.js';
import { LocalScheduler, type TickPublisher } from './local-scheduler.js';
import { createSchedulerApp } from './server.js';

const job = (id: string, everySeconds: number): SchedulerJob => ({
  id,
  description: id,
  schedule: '* * * * *',
  timeZone: 'Etc/UTC',
  everySeconds,
  topic: `topic-${id}`,
  data: Buffer.from(JSON.stringify({ job: id })),
  attributes: { a: id },
});

class RecordingPublisher implements TickPublisher {
  sent: Array<{ topic: string; data: string; attributes: Record<string, string> }> = [];
  failWith: Error | undefined;
  async publishRaw(topic: string, data: Buffer, attributes: Record<string, string>) {
    if (this.failWith) throw this.failWith;
    this.sent.push({ topic, data: data.toString(), attributes });
    return String(this.sent.length);
  }
}

describe('LocalScheduler', () => {
  let clock: ManualClock;
  let pub: RecordingPublisher;
  let sched: LocalScheduler;
  beforeEach(() => {
    clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
    pub = new RecordingPublisher();
    sched = new LocalScheduler([job('a', 2), job('b', 4)], pub, { clock, speed: 2 });
  });
  afterEach(async () => {
    await sched.stop();
    vi.useRealTimers();
  });

  it('fire publishes the job data and attributes to its topic and records the attempt', async () => {
    clock.advance(5000);
    await expect(sched.fire('a')).resolves.toBe('1');
    expect(pub.sent).toEqual([{ topic: 'topic-a', data: '{"job":"a"}', attributes: { a: 'a' } }]);
    expect(sched.get('a')).toMatchObject({
      state: 'ENABLED',
      lastAttemptTime: new Date('2026-01-01T00:00:05Z'),
      lastStatus: { code: 0 },
    });
  });

  it('refuses to fire a paused job, and fires it again once resumed', async () => {
    expect(sched.pause('a').state).toBe('PAUSED');
    await expect(sched.fire('a')).rejects.toMatchObject({ kind: 'failed_precondition' });
    expect(pub.sent).toEqual([]);
    expect(sched.get('a').lastAttemptTime).toBeUndefined();
    expect(sched.resume('a').state).toBe('ENABLED');
    await sched.fire('a');
    expect(pub.sent).toHaveLength(1);
  });

  it('pause needs an ENABLED job and resume a PAUSED one, as Cloud Scheduler documents', () => {
    expect(() => sched.resume('a')).toThrow(expect.objectContaining({ kind: 'failed_precondition' }));
    sched.pause('a');
    const updated = sched.get('a').userUpdateTime;
    clock.advance(1000);
    expect(() => sched.pause('a')).toThrow(expect.objectContaining({ kind: 'failed_precondition' }));
    expect(sched.get('a')).toMatchObject({ state: 'PAUSED', userUpdateTime: updated });
  });

  it.each(['get', 'fire', 'pause', 'resume'] as const)('%s of an unknown job is not_found', async (op) => {
    await expect(async () => sched[op]('nope')).rejects.toMatchObject({ kind: 'not_found' });
  });

  it('records a failed attempt as UNAVAILABLE and rejects', async () => {
    pub.failWith = new Error('emulator down');
    await expect(sched.fire('a')).rejects.toThrow('emulator down');
    expect(sched.get('a').lastStatus).toEqual({ code: 14, message: 'emulator down' });
  });

  /** Timed tests run on fake timers, whose faked Date the default clock reads. */
  const fakeTime = () => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date('2026-01-01T00:00:00Z'));
  };

  it('fires each enabled job every everySeconds / speed, and never a paused one', async () => {
    fakeTime();
    sched = new LocalScheduler([job('a', 2), job('b', 4)], pub, { speed: 2 });
    sched.start();
    expect(sched.get('a').scheduleTime).toEqual(new Date('2026-01-01T00:00:01Z'));
    sched.pause('b');
    await vi.advanceTimersByTimeAsync(4_100);
    expect(pub.sent.map((m) => m.topic)).toEqual(['topic-a', 'topic-a', 'topic-a', 'topic-a']);
    expect(sched.get('b').scheduleTime).toBeUndefined();
    sched.resume('b');
    await vi.advanceTimersByTimeAsync(2_000);
    expect(pub.sent.filter((m) => m.topic === 'topic-b')).toHaveLength(1);
    await sched.stop();
    const count = pub.sent.length;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(pub.sent).toHaveLength(count);
  });

  it('keeps the loop alive when a timed attempt fails, reporting it', async () => {
    fakeTime();
    const errors: string[] = [];
    sched = new LocalScheduler([job('a', 1)], pub, { onError: (id) => errors.push(id) });
    pub.failWith = new Error('down');
    sched.start();
    await vi.advanceTimersByTimeAsync(2_100);
    expect(errors).toEqual(['a', 'a']);
    pub.failWith = undefined;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(pub.sent).toHaveLength(1);
  });

  it('keeps its ticks on one grid when timers fire late, and skips slots already past', async () => {
    fakeTime();
    // The scheduler reads this clock `lag` ms ahead of the timers: each timer looks that much late.
    let lag = 0;
    sched = new LocalScheduler([job('a', 1)], pub, { clock: { now: () => new Date(Date.now() + lag) } });
    sched.start();
    const due = () => sched.get('a').scheduleTime?.toISOString();
    expect(due()).toBe('2026-01-01T00:00:01.000Z');
    lag = 400;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(pub.sent).toHaveLength(1);
    expect(due()).toBe('2026-01-01T00:00:02.000Z'); // not 02.400: the lateness does not carry on
    await vi.advanceTimersByTimeAsync(600); // the clock reads 02.000: the tick is due
    expect(pub.sent).toHaveLength(2);
    expect(due()).toBe('2026-01-01T00:00:03.000Z');
    lag = 2_900; // a stall: the tick due at 03 fires when the clock reads 05.500, past the 04 and 05 slots
    await vi.advanceTimersByTimeAsync(1_000);
    expect(pub.sent).toHaveLength(3); // one tick, not a burst for the slots it missed
    expect(due()).toBe('2026-01-01T00:00:06.000Z');
  });

  it('a clock stepped back starts the grid again from now, rather than wait out the step', async () => {
    fakeTime();
    let lag = 0;
    sched = new LocalScheduler([job('a', 1)], pub, { clock: { now: () => new Date(Date.now() + lag) } });
    sched.start();
    lag = -3_600_000; // the tick due at 01 fires when the clock reads an hour earlier
    await vi.advanceTimersByTimeAsync(1_000);
    expect(pub.sent).toHaveLength(1);
    expect(sched.get('a').scheduleTime?.toISOString()).toBe('2025-12-31T23:00:02.000Z');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(pub.sent).toHaveLength(2); // a second later, not an hour
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])(
    'rejects a speed of %s (not positive, or no period)',
    (speed) => {
      expect(() => new LocalScheduler([], pub, { speed })).toThrow(RangeError);
    },
  );
});

// RunJob answers with the job and dispatches it (Cloud Scheduler's contract): awaiting the publish made a
// local `:run` as slow as Pub/Sub, and the API's scheduler adapter, which gives a call 10 s, answered 503
// outcome_unknown for a run that published after all.
describe('POST …/jobs/ID:run', () => {
  /** A publish that is still out until the test lets it finish, however long that is. */
  class HeldPublisher implements TickPublisher {
    sent: string[] = [];
    private release: Array<(err?: Error) => void> = [];
    publishRaw(topic: string): Promise<string> {
      return new Promise((resolve, reject) => {
        this.release.push((err) => {
          if (err) return reject(err);
          this.sent.push(topic);
          resolve(String(this.sent.length));
        });
      });
    }
    get pending() {
      return this.release.length;
    }
    finish(err?: Error) {
      for (const done of this.release.splice(0)) done(err);
    }
  }

  const ctx = { projectId: 'p', location: 'l' };
  const run = (app: ReturnType<typeof createSchedulerApp>, id: string) =>
    Promise.race([
      app.request(`/v1/projects/p/locations/l/jobs/${id}:run`, { method: 'POST' }),
      new Promise<'no answer'>((resolve) => setTimeout(() => resolve('no answer'), 1_000)),
    ]);

  it('answers 200 with the job while the publish is still out; the publish completes and stop waits for it', async () => {
    const pub = new HeldPublisher();
    const sched = new LocalScheduler([job('a', 60)], pub);
    const app = createSchedulerApp(sched, ctx);
    const asked = Date.now();
    const res = await run(app, 'a');
    expect(res).not.toBe('no answer');
    const answer = res as Response;
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as { name: string; lastAttemptTime?: string; status?: unknown };
    expect(body.name).toBe('projects/p/locations/l/jobs/a');
    // The job as it stood: never attempted, so neither a time nor a status.
    expect(body).not.toHaveProperty('lastAttemptTime');
    expect(body).not.toHaveProperty('status');
    expect(pub.pending).toBe(1);

    let stopped = false;
    const stopping = sched.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(stopped).toBe(false);
    pub.finish();
    await stopping;
    expect(pub.sent).toEqual(['topic-a']);
    expect(sched.get('a').lastStatus).toEqual({ code: 0 });
    expect(sched.get('a').lastAttemptTime!.getTime()).toBeGreaterThanOrEqual(asked);
  });

  it("records a background publish's failure in the job's status and reports it to onError", async () => {
    const pub = new HeldPublisher();
    const errors: string[] = [];
    const sched = new LocalScheduler([job('a', 60)], pub, { onError: (id) => errors.push(id) });
    const res = await run(createSchedulerApp(sched, ctx), 'a');
    expect((res as Response).status).toBe(200);
    pub.finish(new Error('deadline exceeded'));
    await sched.stop();
    expect(errors).toEqual(['a']);
    expect(sched.get('a').lastStatus).toEqual({ code: 14, message: 'deadline exceeded' });
  });

  it('still refuses a paused job (FAILED_PRECONDITION) and an unknown one (NOT_FOUND) at once', async () => {
    const pub = new HeldPublisher();
    const sched = new LocalScheduler([job('a', 60)], pub);
    const app = createSchedulerApp(sched, ctx);
    sched.pause('a');
    expect(((await run(app, 'a')) as Response).status).toBe(400);
    expect(((await run(app, 'nope')) as Response).status).toBe(404);
    expect(pub.pending).toBe(0);
    await sched.stop();
  });
});

// The run answer and `get` pair a time with its own attempt's status. The answer carried the new attempt's
// time with the previous attempt's status (none, for a first run), which the API's adapter reads as OK:
// `proxyplane jobs run` showed OK for a run whose publish then failed.
describe('the attempt a job reports', () => {
  class Held implements TickPublisher {
    private release: Array<(err?: Error) => void> = [];
    publishRaw(): Promise<string> {
      return new Promise((resolve, reject) => {
        this.release.push((err) => (err ? reject(err) : resolve('1')));
      });
    }
    finish(err?: Error) {
      for (const done of this.release.splice(0)) done(err);
    }
  }
  const t = (s: string) => new Date(`2026-01-01T00:00:${s}Z`);
  const attempt = (v: JobView) => ({ at: v.lastAttemptTime, status: v.lastStatus });

  it("run answers the previous attempt's time and status; get shows this attempt's once it is over", async () => {
    const clock = new ManualClock(t('01'));
    const pub = new Held();
    const sched = new LocalScheduler([job('a', 60)], pub, { clock, onError: () => {} });

    const first = sched.run('a');
    expect(attempt(first)).toEqual({ at: undefined, status: undefined });
    expect(attempt(sched.get('a'))).toEqual({ at: undefined, status: undefined });
    pub.finish();
    await settle();
    expect(attempt(sched.get('a'))).toEqual({ at: t('01'), status: { code: 0 } });

    clock.advance(10_000);
    const second = sched.run('a');
    expect(attempt(second)).toEqual({ at: t('01'), status: { code: 0 } });
    // While the publish is out, get still pairs the previous attempt's time with its status.
    expect(attempt(sched.get('a'))).toEqual({ at: t('01'), status: { code: 0 } });
    pub.finish(new Error('deadline exceeded'));
    await settle();
    expect(attempt(sched.get('a'))).toEqual({
      at: t('11'),
      status: { code: 14, message: 'deadline exceeded' },
    });
  });

  it('an attempt that ends after a later one was recorded leaves the later one', async () => {
    const clock = new ManualClock(t('01'));
    const held = new Held();
    let calls = 0;
    // The first publish is held; the next ones go through at once.
    const pub: TickPublisher = {
      publishRaw: () => (calls++ === 0 ? held.publishRaw() : Promise.resolve('2')),
    };
    const sched = new LocalScheduler([job('a', 60)], pub, { clock });
    const older = sched.fire('a');
    clock.advance(5_000);
    await sched.fire('a');
    expect(attempt(sched.get('a'))).toEqual({ at: t('06'), status: { code: 0 } });
    held.finish(new Error('late failure'));
    await expect(older).rejects.toThrow('late failure');
    expect(attempt(sched.get('a'))).toEqual({ at: t('06'), status: { code: 0 } });
  });
});

/** Lets a background attempt whose publish was just released record itself. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

// The local plane stops the scheduler before its HTTP server: a `:run` taken in between published
// untracked, on a Pub/Sub client the plane closed next.
describe('stop', () => {
  it('refuses run once it has begun, and waits for a run taken just before it', async () => {
    let release!: () => void;
    const sent: string[] = [];
    const pub: TickPublisher = {
      publishRaw: (topic) =>
        new Promise((resolve) => {
          release = () => {
            sent.push(topic);
            resolve('1');
          };
        }),
    };
    const sched = new LocalScheduler([job('a', 60)], pub);
    sched.run('a');
    let stopped = false;
    const stopping = sched.stop().then(() => {
      stopped = true;
    });
    expect(() => sched.run('a')).toThrow(expect.objectContaining({ kind: 'unavailable' }));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(sent).toEqual(['topic-a']);
  });

  it('answers a :run during stop 503 UNAVAILABLE, publishing nothing', async () => {
    const sent: string[] = [];
    const sched = new LocalScheduler([job('a', 60)], {
      publishRaw: async (topic) => {
        sent.push(topic);
        return '1';
      },
    });
    const app = createSchedulerApp(sched, { projectId: 'p', location: 'l' });
    const stopping = sched.stop();
    const res = await app.request('/v1/projects/p/locations/l/jobs/a:run', { method: 'POST' });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { status: string } }).error.status).toBe('UNAVAILABLE');
    await stopping;
    expect(sent).toEqual([]);
  });
});
