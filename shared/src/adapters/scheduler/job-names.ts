// Table id ↔ Cloud Scheduler resource name, in one place. terraform/scheduler.tf names each job by its
// table id (`name = each.key`) in `var.region`, so on GCP the job of row `gc-sweep` is
// projects/<project>/locations/<REGION>/jobs/gc-sweep (test/terraform/jobs.test.ts holds Terraform to it);
// the local scheduler serves the same names (emulators/scheduler/rest-shapes.ts).
import type { ScheduleTable } from '../../config/topology.js';

/** The jobs the module controls: every row of the schedule table, and nothing else. */
export const controllableJobIds = (table: ScheduleTable): string[] => Object.keys(table.jobs);

export interface JobLocation {
  projectId: string;
  /** The Cloud Scheduler location: the plane's REGION. */
  location: string;
}

export const jobsParent = (at: JobLocation): string => `projects/${at.projectId}/locations/${at.location}`;

export const jobResourceName = (at: JobLocation, id: string): string => `${jobsParent(at)}/jobs/${id}`;

/** The table id of a resource name under `at`, or null for a job elsewhere. */
export function jobIdOf(at: JobLocation, resource: string): string | null {
  const prefix = `${jobsParent(at)}/jobs/`;
  if (!resource.startsWith(prefix)) return null;
  const id = resource.slice(prefix.length);
  return id.length > 0 && !id.includes('/') ? id : null;
}
