// account-balance: the credits on the platform account, and what is reserved by work in flight.
import { z } from 'zod';
import { defineTool } from './tool.js';

export const accountBalance = defineTool({
  name: 'account-balance',
  description: 'Read the platform account balance in credits (total, reserved by work in flight, available).',
  input: z.object({}),
  run: async (_input, ctx) => {
    const b = await ctx.platform.getBalance();
    return {
      content: `Balance ${b.balanceCredits} credits, ${b.reservedCredits} reserved by work in flight, ${b.availableCredits} available (${b.environment}).`,
    };
  },
});
