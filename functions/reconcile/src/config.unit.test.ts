// The reconcile function's environment: on GCP the proxy VMs' network and service account are required
// (a VM without them is unreachable or cannot read its credentials); locally the compute emulator needs
// neither.
import { describe, expect, it } from 'vitest';
import { loadReconcileConfig, pollIntervals, ReconcileConfigError } from './config.js';

const gcp = {
  GOOGLE_CLOUD_PROJECT: 'p',
  GCE_NETWORK: 'https://www.googleapis.com/compute/v1/projects/p/global/networks/proxyplane',
  GCE_SERVICE_ACCOUNT: 'pp-proxy-vm@p.iam.gserviceaccount.com',
};

describe('loadReconcileConfig', () => {
  it('accepts the GCP environment Terraform sets', () => {
    const c = loadReconcileConfig({ ...gcp, RECONCILE_DRIFT_POLL_MS: '300000' });
    expect(c).toMatchObject({ GCE_NETWORK: gcp.GCE_NETWORK, GCE_SERVICE_ACCOUNT: gcp.GCE_SERVICE_ACCOUNT });
    expect(pollIntervals(c).DriftPoll).toBe(300_000);
  });

  it.each([
    ['GCE_NETWORK', { ...gcp, GCE_NETWORK: undefined }],
    ['GCE_SERVICE_ACCOUNT', { ...gcp, GCE_SERVICE_ACCOUNT: undefined }],
    ['GCE_NETWORK and GCE_SERVICE_ACCOUNT', { GOOGLE_CLOUD_PROJECT: 'p' }],
    // The names an earlier Terraform set: read by nothing, so they must not satisfy the check.
    [
      'GCE_NETWORK and GCE_SERVICE_ACCOUNT',
      { PROXY_NETWORK: gcp.GCE_NETWORK, PROXY_SERVICE_ACCOUNT: gcp.GCE_SERVICE_ACCOUNT },
    ],
  ])('refuses to start on GCP without %s', (missing, env) => {
    const attempt = () => loadReconcileConfig(env);
    expect(attempt).toThrow(ReconcileConfigError);
    expect(attempt).toThrow(new RegExp(`^${missing} must be set on GCP`));
  });

  it('needs neither against the compute emulator', () => {
    expect(loadReconcileConfig({ COMPUTE_EMULATOR_HOST: '127.0.0.1:18190' }).GCE_NETWORK).toBeUndefined();
  });
});
