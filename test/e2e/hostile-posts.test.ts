// End to end: hostile strings from the person, the model and the platform, and a platform that echoes the token, never leave the bot live or in clear.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { text, type Script } from '../kit/fakes/anthropic/index.js';
import { HOSTILE_TEXT, liveTokensIn } from '../helpers/live-tokens.js';
import { startHarness, waitForVerdict } from '../kit/harness.js';
import { waitUntil } from '../kit/wait.js';
import { loopScript, SEED_MESSAGE } from '../kit/loop-script.js';

const OWNER = 'UOWNER1';

/** The loop agent, whose every final answer also repeats the person's message and adds hostile text of its own. */
function hostileModel(inner: Script): Script {
  return async (req, ctx) => {
    const reply = await inner(req, ctx);
    if (!('content' in reply) || reply.content.some((b) => b.type === 'tool_use')) return reply;
    const prompts = req.messages.flatMap((m) =>
      m.role === 'user' && Array.isArray(m.content) ? m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])) : [],
    );
    const person = prompts.filter((p) => p.startsWith('[Slack message from')).at(-1)?.split('\n')[1] ?? '';
    return { ...reply, content: [text(`You said: ${person.slice(0, 120)}\nAlso ${HOSTILE_TEXT} [Open the report](https://evil.example) <@${OWNER}>`), ...reply.content] };
  };
}

describe('hostile strings through every path into every post and the Home view', () => {
  it('person, model and platform data (benchmark 667: name and categories carry mentions and a disguised link)', async () => {
    const h = await startHarness({ script: hostileModel(loopScript()) });
    try {
      const m = await h.mention({ user: OWNER, text: `<@UBOT> ${HOSTILE_TEXT} ${SEED_MESSAGE.replace('<@UBOT> ', '').replaceAll('104', '667')}` });
      await waitForVerdict(h, m.ts, 90_000);
      const posts = h.posts(m.ts);
      // The platform's pages and Slack's permalinks: the only links the bot forms.
      const allowedOrigins = [h.bot()!.sandbox!.url, 'https://fake.slack.test'];
      expect(posts.length).toBe(4);
      for (const post of posts) expect(liveTokensIn(post, { ownerUserId: OWNER, allowedOrigins })).toEqual([]);
      // The chart's message too.
      const charts = await waitUntil(() => (h.filePosts(m.ts).length > 0 ? h.filePosts(m.ts) : undefined), 30_000, 'the comparison chart');
      for (const post of charts) expect(liveTokensIn(post, { ownerUserId: OWNER, allowedOrigins })).toEqual([]);
      for (const post of posts) expect(post.text.startsWith(`<@${OWNER}>`) || post.text.includes(`<@${OWNER}>`)).toBe(true);
      const thread = JSON.stringify(posts);
      // Each source did reach the posts, shown literally.
      expect(thread).toContain('You said: &lt;@UBOT&gt; &lt;!channel&gt; &lt;!here&gt; &lt;@U123&gt; &lt;https://evil.example|Open the report&gt; Q&amp;A &lt;b&gt; Run benchmark 667');
      expect(thread).toContain('Also &lt;!channel&gt; &lt;!here&gt; &lt;@U123&gt;');
      expect(thread).toContain('Open the report (https://evil.example)');
      expect(thread).toContain('Category: &lt;!here&gt;');
      expect(thread).toContain('Category: &lt;@U123&gt;');

      // A reply in the thread takes the same way: the agent repeats it, the post shows it literally.
      const reply = await h.reply({ user: OWNER, threadTs: m.ts, text: `thanks ${HOSTILE_TEXT}` });
      expect(reply.status).toBe(200);
      const [answer] = (await h.waitForPosts(m.ts, 5, 30_000)).slice(4);
      expect(liveTokensIn(answer, { ownerUserId: OWNER, allowedOrigins })).toEqual([]);
      expect(answer!.text).toContain('You said: thanks &lt;!channel&gt;');

      const home = await waitUntil(() => {
        const view = h.slack.homeViews.get(OWNER);
        return view && JSON.stringify(view).split('You said').length > posts.length + 1 ? view : undefined;
      }, 20_000, 'the Home view with the turns');
      expect(liveTokensIn(home, { ownerUserId: OWNER, allowedOrigins })).toEqual([]);
      expect(JSON.stringify(home)).toContain('&lt;!channel&gt;');
    } finally {
      await h.stop();
    }
  }, 150_000);

  it('a platform whose errors echo the Authorization header: the token is in no post, Home view or model request', async () => {
    let seenAuthorization = '';
    const platform: Server = createServer((req, res) => {
      seenAuthorization = String(req.headers.authorization ?? '');
      req.resume();
      const body = JSON.stringify({ error: { code: 'invalid_request', message: `request refused; it carried Authorization: ${seenAuthorization}` } });
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(body);
    });
    await new Promise<void>((resolve) => platform.listen(0, '127.0.0.1', resolve));
    const token = `bgt_secret_${Date.now()}`;
    const h = await startHarness({
      script: loopScript(),
      env: {
        BENCHGEN_API_URL: `http://127.0.0.1:${(platform.address() as AddressInfo).port}`,
        BENCHGEN_API_TOKEN: token,
        BENCHGEN_WEBHOOK_SECRET: `whsec_${Buffer.from('a webhook signing key of 32 bytes').toString('base64')}`,
      },
    });
    try {
      const m = await h.mention({ user: OWNER, text: SEED_MESSAGE });
      const [post] = await h.waitForPosts(m.ts, 1, 30_000);
      expect(seenAuthorization).toContain(token);
      expect(post!.text).toContain('Authorization: Token [redacted]');
      const home = await waitUntil(() => h.slack.homeViews.get(OWNER), 20_000, 'the Home view');
      const outputs = {
        posts: JSON.stringify(h.slack.messages()),
        'Home view': JSON.stringify(home),
        'model requests': JSON.stringify(h.model.requests.map((r) => r.body)),
      };
      expect(outputs['model requests']).toContain('Authorization: Token [redacted]');
      for (const [where, output] of Object.entries(outputs)) expect(output.includes(token), `token in ${where}`).toBe(false);
    } finally {
      await h.stop();
      await new Promise((resolve) => platform.close(resolve));
    }
  }, 90_000);
});
