// The agent's tool set, in a fixed order (the definitions are sent byte-identical on every turn).
import { accountBalance } from './account-balance.js';
import { benchmarkAnalyze } from './benchmark-analyze.js';
import { benchmarkDetails } from './benchmark-details.js';
import { benchmarkImport } from './benchmark-import.js';
import { benchmarkLaunch } from './benchmark-launch.js';
import { datasetBuild } from './dataset-build.js';
import { modelLookup } from './model-lookup.js';
import { offerNextSteps } from './offer-next-steps.js';
import { planSet } from './plan-set.js';
import { runStatus } from './run-status.js';
import type { AgentTool } from './tool.js';
import { trainingLaunch } from './training-launch.js';
import { trainingStatus } from './training-status.js';

export function createTools(): AgentTool<never>[] {
  return [
    modelLookup,
    benchmarkDetails,
    benchmarkImport,
    accountBalance,
    planSet,
    benchmarkLaunch,
    runStatus,
    datasetBuild,
    trainingLaunch,
    trainingStatus,
    benchmarkAnalyze,
    offerNextSteps,
  ] as unknown as AgentTool<never>[];
}
