import { describe, expect, it } from 'vitest';
import type { InstanceRequest } from '../../domain/reconcile/types.js';
import { buildInsertRequest } from './build-insert-request.js';

const request: InstanceRequest = {
  name: 'pp-0123456789abcdef0123',
  proxyName: 'eu-1',
  uid: '01234567-89ab-4def-8123-456789abcdef',
  zone: 'europe-west1-b',
  machineType: 'e2-small',
  image: 'projects/debian-cloud/global/images/family/debian-12',
  port: 3128,
  protocol: 'http',
  startupScript: '#cloud-config\n',
  credentialsSecret: 'projects/acme/secrets/eu-creds/versions/4',
  specHash: '0123456789abcdef',
};

describe('buildInsertRequest', () => {
  it('builds the whole insert: labels as ownership proof, tag, metadata, NAT, zone-scoped machine type', () => {
    expect(
      buildInsertRequest(request, {
        project: 'acme',
        serviceAccountEmail: 'vm@acme.iam.gserviceaccount.com',
      }),
    ).toMatchInlineSnapshot(`
      {
        "instanceResource": {
          "description": "proxyplane proxy eu-1",
          "disks": [
            {
              "autoDelete": true,
              "boot": true,
              "initializeParams": {
                "sourceImage": "projects/debian-cloud/global/images/family/debian-12",
              },
            },
          ],
          "labels": {
            "managed-by": "proxyplane",
            "proxyplane-name": "eu-1",
            "proxyplane-spec-hash": "0123456789abcdef",
            "proxyplane-uid": "01234567-89ab-4def-8123-456789abcdef",
          },
          "machineType": "zones/europe-west1-b/machineTypes/e2-small",
          "metadata": {
            "items": [
              {
                "key": "startup-script",
                "value": "#cloud-config
      ",
              },
              {
                "key": "proxyplane-proxy-port",
                "value": "3128",
              },
              {
                "key": "block-project-ssh-keys",
                "value": "TRUE",
              },
              {
                "key": "enable-oslogin",
                "value": "TRUE",
              },
              {
                "key": "proxyplane-credentials-secret",
                "value": "projects/acme/secrets/eu-creds/versions/4",
              },
            ],
          },
          "name": "pp-0123456789abcdef0123",
          "networkInterfaces": [
            {
              "accessConfigs": [
                {
                  "name": "External NAT",
                  "type": "ONE_TO_ONE_NAT",
                },
              ],
              "network": "global/networks/default",
            },
          ],
          "serviceAccounts": [
            {
              "email": "vm@acme.iam.gserviceaccount.com",
              "scopes": [
                "https://www.googleapis.com/auth/cloud-platform",
              ],
            },
          ],
          "tags": {
            "items": [
              "proxyplane-proxy",
            ],
          },
        },
        "project": "acme",
        "zone": "europe-west1-b",
      }
    `);
  });

  it('omits the credentials reference and the service account when there are none', () => {
    const r = buildInsertRequest(
      { ...request, credentialsSecret: null },
      { project: 'acme', subnetwork: 'regions/r/subnetworks/s' },
    );
    const keys = r.instanceResource?.metadata?.items?.map((i) => i.key);
    expect(keys).toEqual([
      'startup-script',
      'proxyplane-proxy-port',
      'block-project-ssh-keys',
      'enable-oslogin',
    ]);
    expect(r.instanceResource).not.toHaveProperty('serviceAccounts');
    expect(r.instanceResource?.networkInterfaces?.[0]?.subnetwork).toBe('regions/r/subnetworks/s');
  });

  it.each([
    ['as the API makes them', request.uid],
    // A uid a console edit put in capitals: GCE refused the label (400 invalid, a permanent failure).
    ['in capitals', request.uid.toUpperCase()],
  ])('puts only valid GCE label values on the instance, the uid %s', (_n, uid) => {
    const labels =
      buildInsertRequest({ ...request, uid }, { project: 'acme' }).instanceResource?.labels ?? {};
    for (const value of Object.values(labels)) expect(value).toMatch(/^[a-z0-9_-]{0,63}$/);
  });
});
