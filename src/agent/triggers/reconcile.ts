// The sweep found a finished run or training whose webhook never arrived: the same turn as the webhook's, told so.
import { resourceEventHandler } from './platform-event.js';

export const reconcileHandler = resourceEventHandler({ foundBySweep: true });
