// Simulated durations and the prices of trainings: what a quote says before anything is launched.
import { roundCredits, type TrainingEstimateWire } from '@verdict/contract/contract';
import type { DatasetRow } from './store/datasets.js';
import type { ModelRow } from './store/models.js';

export function runDurationMs(questionCount: number, timeScale: number): number {
  return 60_000 * Math.sqrt(Math.max(1, questionCount / 100)) * timeScale;
}

export function queueDelayMs(timeScale: number): number {
  return 2_000 * timeScale;
}

export function trainingDurationMs(trainedTokens: number, timeScale: number): number {
  return 300_000 * Math.min(4, Math.max(0.5, trainedTokens / 60_000)) * timeScale;
}

/** Training price per 1,000 trained tokens (dataset tokens x epochs), by base model size. */
export function trainingRate(params: number): number {
  if (params <= 1_000_000_000) return 0.2;
  if (params <= 3_500_000_000) return 0.4;
  if (params <= 10_000_000_000) return 1;
  return 2.5;
}

export function quoteTraining(
  dataset: DatasetRow,
  model: ModelRow,
  epochs: number,
  timeScale: number,
): TrainingEstimateWire {
  const trainedTokens = dataset.token_count * epochs;
  return trainingQuote(dataset, model, epochs, {
    rate: trainingRate(model.params),
    minimumCredits: 1,
    durationSeconds: Math.round((queueDelayMs(timeScale) + trainingDurationMs(trainedTokens, timeScale)) / 10) / 100,
  });
}

/** The estimate of a training, simulated or real: trained tokens (dataset tokens x epochs) x a rate per 1,000. */
export function trainingQuote(
  dataset: DatasetRow,
  model: ModelRow,
  epochs: number,
  pricing: { rate: number; minimumCredits: number; durationSeconds: number },
): TrainingEstimateWire {
  const trainedTokens = dataset.token_count * epochs;
  return {
    dataset_id: dataset.id,
    base_model_id: model.id,
    epochs,
    trained_tokens: trainedTokens,
    credits_per_1k_tokens: pricing.rate,
    price_credits: Math.max(pricing.minimumCredits, roundCredits((trainedTokens / 1000) * pricing.rate)),
    estimated_duration_seconds: pricing.durationSeconds,
    environment: 'sandbox',
  };
}
