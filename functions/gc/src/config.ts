// The gc function's environment, parsed once by the entry point.
import { z } from 'zod';
import { BaseEnv, envNumber } from '../../../shared/src/config/env.js';
import { DefaultMinAgeMs } from '../../../shared/src/domain/gc/orphans.js';

export const GcEnv = BaseEnv.extend({
  /** Seed §8 MinAge: an orphan younger than this may be mid-create and is kept. Tests use seconds. */
  GC_MIN_AGE_SECONDS: envNumber(
    z
      .number()
      .int()
      .min(1)
      .max(7 * 86_400),
  ).default(DefaultMinAgeMs / 1000),
  /**
   * A tick delivered again within this many seconds of the last run's start is a duplicate and does
   * nothing (Pub/Sub is at-least-once). Below the local tick period (30 s), far below the deployed 10 min.
   */
  GC_MIN_RUN_GAP_SECONDS: envNumber(z.number().int().min(0).max(3600)).default(15),
  /**
   * Most orphans one sweep may delete. Orphans come from rare crashes; more at once more likely mean a
   * wrong live set (another project's Firestore), so such a sweep deletes none of them (gc.refused,
   * domain/gc/orphans.ts sweepRefusal).
   */
  GC_MAX_DELETIONS_PER_SWEEP: envNumber(z.number().int().min(1).max(10_000)).default(100),
});
export type GcConfig = z.infer<typeof GcEnv>;

export const loadGcConfig = (env: NodeJS.ProcessEnv = process.env): GcConfig => GcEnv.parse(env);
