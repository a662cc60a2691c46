// Locates the Google Cloud SDK's emulator payloads and Java, and says how to get them when missing.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export class MissingToolError extends Error {
  readonly kind = 'missing_tool';
}

function sdkRoot(env: NodeJS.ProcessEnv): string {
  if (env.CLOUDSDK_ROOT_DIR) return env.CLOUDSDK_ROOT_DIR;
  for (const candidate of [
    '/usr/lib/google-cloud-sdk',
    '/usr/share/google-cloud-sdk',
    '/opt/google-cloud-sdk',
  ]) {
    if (existsSync(candidate)) return candidate;
  }
  try {
    return execFileSync('gcloud', ['info', '--format=value(installation.sdk_root)'], {
      encoding: 'utf8',
    }).trim();
  } catch {
    throw new MissingToolError(
      'The Google Cloud SDK (gcloud) was not found. Install it with the emulators: ' +
        'apt-get install google-cloud-cli google-cloud-cli-firestore-emulator google-cloud-cli-pubsub-emulator ' +
        '(see https://cloud.google.com/sdk/docs/install), or set CLOUDSDK_ROOT_DIR.',
    );
  }
}

export function javaBinary(env: NodeJS.ProcessEnv = process.env): string {
  const java = env.JAVA_HOME ? join(env.JAVA_HOME, 'bin', 'java') : 'java';
  try {
    execFileSync(java, ['-version'], { stdio: 'ignore' });
    return java;
  } catch {
    // A JAVA_HOME that holds no Java is what to fix: "install Java" would send the user the wrong way.
    throw new MissingToolError(
      env.JAVA_HOME
        ? `JAVA_HOME=${env.JAVA_HOME}, but ${java} does not run; the Firestore and Pub/Sub emulators need ` +
            'Java 17 or newer: point JAVA_HOME at one, or unset it to use the java on PATH.'
        : 'Java was not found; the Firestore and Pub/Sub emulators need Java 17 or newer: ' +
            'apt-get install openjdk-17-jre-headless (or set JAVA_HOME).',
    );
  }
}

export interface EmulatorPayloads {
  firestoreJar: string;
  pubsubBin: string;
}

export function emulatorPayloads(env: NodeJS.ProcessEnv = process.env): EmulatorPayloads {
  const root = sdkRoot(env);
  const firestoreJar = join(root, 'platform/cloud-firestore-emulator/cloud-firestore-emulator.jar');
  const pubsubBin = join(root, 'platform/pubsub-emulator/bin/cloud-pubsub-emulator');
  if (!existsSync(firestoreJar)) {
    throw new MissingToolError(
      `The Firestore emulator is not installed (${firestoreJar} missing): ` +
        'gcloud components install cloud-firestore-emulator, or apt-get install google-cloud-cli-firestore-emulator.',
    );
  }
  if (!existsSync(pubsubBin)) {
    throw new MissingToolError(
      `The Pub/Sub emulator is not installed (${pubsubBin} missing): ` +
        'gcloud components install pubsub-emulator, or apt-get install google-cloud-cli-pubsub-emulator.',
    );
  }
  return { firestoreJar, pubsubBin };
}
