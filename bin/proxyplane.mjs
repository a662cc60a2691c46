#!/usr/bin/env node
// The `proxyplane` command (package.json "bin"): registers tsx so the TypeScript sources run as they are,
// then hands over to cli/main.ts. `npx proxyplane --help` in the repo, or `npm link` for a global command.
import { register } from 'tsx/esm/api';

register();
await import('../cli/main.ts');
