// Real training from configuration: the bundled PyTorch trainer (here, or as Ray jobs on a cluster) or Together, adapters beside the models, prices and speed as configured.
import path from 'node:path';
import type { EngineConfig } from '../config.js';
import type { SandboxLogger } from '../sandbox/context.js';
import type { SandboxTrainingOptions } from '../sandbox/sandbox.js';
import { createPytorchTrainer } from './pytorch-trainer.js';
import { createRayTrainer } from './ray-trainer.js';
import { createTogetherTrainer } from './together-trainer.js';

/**
 * Training options for the platform when a real engine is configured (`MODELS_DIR` or
 * `INFERENCE_URL`), else undefined. Adapters go to `MODELS_DIR/adapters` (or `DATA_DIR/adapters`
 * without a models folder); trainer work folders to `DATA_DIR/training`.
 */
export function trainingFromConfig(
  engines: EngineConfig,
  dataDir: string,
  logger: SandboxLogger,
): SandboxTrainingOptions | undefined {
  if (!engines.inferenceUrl && !engines.modelsDir) return undefined;
  const root = path.resolve(dataDir);
  const trainer = engines.togetherApiKey
    ? createTogetherTrainer({
        apiKey: engines.togetherApiKey,
        apiUrl: engines.togetherApiUrl,
        promptStyle: engines.promptStyle,
        pollMs: engines.togetherPollMs,
        maxPollMs: engines.togetherMaxPollMs,
        modelMap: engines.togetherModelMap,
        logger,
      })
    : engines.ray
      ? createRayTrainer({
          address: engines.ray.address,
          sharedDir: engines.ray.sharedDir,
          clusterSharedDir: engines.ray.clusterSharedDir,
          headers: engines.ray.headers,
          numGpus: engines.ray.numGpus,
          numCpus: engines.ray.numCpus,
          ...(engines.ray.resources ? { resources: engines.ray.resources } : {}),
          python: engines.ray.python,
          device: engines.trainerDevice,
          pollMs: engines.ray.pollMs,
          maxPollMs: engines.ray.maxPollMs,
          logger,
        })
      : createPytorchTrainer({
          ...(engines.trainerPython ? { python: engines.trainerPython } : {}),
          threads: engines.threads,
          device: engines.trainerDevice,
          logger,
        });
  return {
    trainer,
    adaptersDir: engines.modelsDir ? path.join(engines.modelsDir, 'adapters') : path.join(root, 'adapters'),
    workDir: path.join(root, 'training'),
    threads: engines.threads,
    creditsPer1kTokens: engines.trainingCreditsPer1kTokens,
    tokensPerSecond: engines.trainingTokensPerSecond,
    ...(engines.trainingLearningRate !== undefined ? { hyperparameters: { learningRate: engines.trainingLearningRate } } : {}),
  };
}
