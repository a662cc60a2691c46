import { join } from 'node:path';
import { repoRoot } from '../../../shared/src/config/local-ports.js';

export { repoRoot };
export const terraformDir = join(repoRoot, 'terraform');
export const tablesModuleDir = join(terraformDir, 'modules/tables');
export const topologyDir = join(repoRoot, 'shared/topology');
export const functionsDir = join(repoRoot, 'functions');
