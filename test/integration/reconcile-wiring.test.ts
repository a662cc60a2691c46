// reconcileDeps gives the GCE provider the network, subnetwork and service account of the function's
// environment (terraform/functions.tf sets them): without them every proxy VM lands in the default VPC,
// where the proxy firewall does not apply, as the default identity, which may not read its credentials
// secret. Nothing else builds the provider from the configuration (build-insert-request.unit.test.ts passes
// the options by hand), so here the wired provider creates an instance on the Compute emulator with the
// real @google-cloud/compute client, and the instance the emulator keeps is read back through the API.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import { computeClients } from '../../emulators/compute/testing.js';
import { loadReconcileConfig } from '../../functions/reconcile/src/config.js';
import { reconcileDeps } from '../../functions/reconcile/src/wiring.js';
import { testProjectId } from '../support/emulators.js';

const project = testProjectId('demo-rwire');
const zone = 'europe-west1-c';
const network = `https://www.googleapis.com/compute/v1/projects/${project}/global/networks/proxyplane`;
const subnetwork = `https://www.googleapis.com/compute/v1/projects/${project}/regions/europe-west1/subnetworks/proxyplane-eu`;
const serviceAccount = `proxy-vm@${project}.iam.gserviceaccount.com`;

let compute: ComputeEmulator;
let clients: ReturnType<typeof computeClients>;

beforeAll(async () => {
  compute = await startComputeEmulator({ bootDelayMs: 20, deleteDelayMs: 20 });
  clients = computeClients(compute.endpoint);
});

afterAll(async () => {
  await clients?.close();
  await compute?.stop();
});

describe('reconcile wiring', () => {
  it('puts every VM on GCE_NETWORK / GCE_SUBNETWORK as GCE_SERVICE_ACCOUNT', async () => {
    const deps = reconcileDeps(
      loadReconcileConfig({
        GOOGLE_CLOUD_PROJECT: project,
        COMPUTE_EMULATOR_HOST: compute.endpoint,
        GCE_NETWORK: network,
        GCE_SUBNETWORK: subnetwork,
        GCE_SERVICE_ACCOUNT: serviceAccount,
        LOG_LEVEL: 'warn',
      }),
      { logFields: { fixture: 'reconcile-wiring' } },
    );
    const [provider] = [...deps.providers.values()];
    const uid = randomUUID();
    const name = `pp-${uid.replaceAll('-', '').slice(0, 20)}`;
    await provider!.create({
      name,
      proxyName: 'p-wiring',
      uid,
      zone,
      machineType: 'e2-small',
      image: 'projects/debian-cloud/global/images/family/debian-12',
      port: 3128,
      protocol: 'http',
      startupScript: '#!/bin/bash\ntrue\n',
      credentialsSecret: null,
      specHash: 'h',
    });
    const [vm] = await clients.instances.get({ project, zone, instance: name });
    expect(vm.networkInterfaces?.[0]).toMatchObject({ network, subnetwork });
    expect(vm.serviceAccounts?.map((sa) => sa.email)).toEqual([serviceAccount]);
  });
});
