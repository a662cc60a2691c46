// biome-ignore-all lint/suspicious/noTemplateCurlyInString: Terraform expressions parse to "${…}" strings.
// The probe's echo as Terraform hands it over: the API's https /v1/echo by default (EGRESS checks the
// exit address only), an operator's plain-http echo when `probe_echo_url` names one (forwarding-header
// leaks too), and BASIC's handshake on the API either way — an http echo's port 80 is one squid refuses
// CONNECT to on every managed VM (docs/health.md § EGRESS through an http echo).
import { beforeAll, describe, expect, it } from 'vitest';
import { echoSeesForwardingHeaders } from '../../functions/probe/src/echo-scope.js';
import { loadModule, type TfConfig } from './support/hcl.js';
import { terraformDir } from './support/paths.js';
import { REQUIRED_VARIABLES, SAMPLE_PROJECT_NUMBER, TerraformValues } from './support/unit-env.js';

let tf: TfConfig;
beforeAll(async () => {
  tf = await loadModule(terraformDir);
});

const probeEnv = (vars: Record<string, unknown> = {}) => {
  const values = new TerraformValues(tf, { ...REQUIRED_VARIABLES, ...vars });
  return (values.local('function_env') as Record<string, Record<string, string>>).probe!;
};
const api = `https://proxyplane-api-${SAMPLE_PROJECT_NUMBER}.us-central1.run.app`;

describe('the probe’s echo and handshake as Terraform sets them', () => {
  it('by default: the API’s /v1/echo, https, so no header-leak checks', () => {
    expect(tf.variable.probe_echo_url!.default).toBeNull();
    const env = probeEnv();
    expect(env).toMatchObject({ PROBE_ECHO_URL: `${api}/v1/echo`, PROBE_HANDSHAKE_URL: api });
    expect(echoSeesForwardingHeaders(env.PROBE_ECHO_URL!)).toBe(false);
  });

  it('probe_echo_url: the operator’s echo, while the handshake stays on the API', () => {
    const env = probeEnv({ probe_echo_url: 'http://echo.example.net/v1/echo' });
    expect(env).toMatchObject({
      PROBE_ECHO_URL: 'http://echo.example.net/v1/echo',
      PROBE_HANDSHAKE_URL: api,
    });
    expect(echoSeesForwardingHeaders(env.PROBE_ECHO_URL!)).toBe(true);
  });
});
