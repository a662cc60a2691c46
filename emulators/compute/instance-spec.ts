// What an insert request asked for, normalised: the part of an instance the caller owns. The emulator
// adds the rest (id, status, addresses, timestamps) in instance.ts.

export interface MetadataItem {
  key: string;
  value: string;
}

export interface DiskSpec {
  boot: boolean;
  autoDelete: boolean;
  deviceName: string;
  diskName: string;
  diskSizeGb: string;
  sourceImage?: string;
  source?: string;
}

export interface AccessConfigSpec {
  name: string;
  type: string;
  networkTier: string;
}

export interface NicSpec {
  network: string;
  subnetwork?: string;
  accessConfigs: AccessConfigSpec[];
}

export interface SchedulingSpec {
  preemptible: boolean;
  automaticRestart: boolean;
  onHostMaintenance: string;
  provisioningModel: string;
}

export interface InstanceSpec {
  name: string;
  description: string;
  machineType: string;
  labels: Record<string, string>;
  tags: string[];
  metadata: MetadataItem[];
  disks: DiskSpec[];
  networkInterfaces: NicSpec[];
  scheduling: SchedulingSpec;
  serviceAccounts: Array<{ email: string; scopes: string[] }>;
  deletionProtection: boolean;
}

/** Instance metadata keys the emulated VM's boot reads (the deployed startup script reads the same). */
export const METADATA_PROXY_PORT = 'proxyplane-proxy-port';
export const METADATA_CREDENTIALS_SECRET = 'proxyplane-credentials-secret';
/** The script the VM runs at boot; the default one carries squid.conf, whose `acl SSL_ports` the emulator reads. */
export const METADATA_STARTUP_SCRIPT = 'startup-script';
export const DEFAULT_PROXY_PORT = 3128;

export const metadataValue = (spec: InstanceSpec, key: string) =>
  spec.metadata.find((item) => item.key === key)?.value;
