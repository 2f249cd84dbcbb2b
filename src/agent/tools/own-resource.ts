// Platform ids are global, what they show is not: a tool reads only runs and trainings of its own workspace.
import { failure } from '../../errors.js';
import { findResourceByPlatformId } from '../../store/resources.js';
import type { ResourceKind } from '../../store/tables.js';
import { toolError, type ToolContext } from './tool.js';

/** Refuses a run or training another workspace started, as if it did not exist. */
export async function requireOwnResource(ctx: ToolContext, kind: ResourceKind, platformId: string): Promise<void> {
  const resource = await findResourceByPlatformId(ctx.db, kind, platformId);
  if (resource && resource.team_id !== ctx.chat.team_id) {
    throw toolError(failure('resource_not_found', { kind, id: platformId }));
  }
}
