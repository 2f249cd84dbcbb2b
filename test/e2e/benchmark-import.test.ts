// End to end: a benchmark file shared in a Slack thread is downloaded with the bot token, uploaded to the platform, and usable by its id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastToolResults, lastUserContent, text, toolUse, type Script } from '../kit/fakes/anthropic/index.js';
import { startHarness, TEAM, type Harness } from '../kit/harness.js';

/** Imports the file the newest message shares, then repeats the tool's answer in the thread. */
const importScript: Script = (req) => {
  const results = lastToolResults(req);
  const imported = results.find((r) => r.name === 'benchmark-import');
  if (imported) {
    const content = typeof imported.content === 'string' ? imported.content : JSON.stringify(imported.content);
    return { content: [text(`${imported.is_error ? 'Refused' : 'Imported'}: ${content}`)] };
  }
  const said = lastUserContent(req).flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n');
  const fileId = /file id (F[0-9A-Z]+)/.exec(said)?.[1];
  if (!fileId) return { content: [text('No file here.')] };
  return { content: [toolUse('benchmark-import', { fileId })], stop_reason: 'tool_use' };
};

const jsonl = (...objects: object[]) => objects.map((o) => JSON.stringify(o)).join('\n') + '\n';
const STORIES = jsonl(
  { id: 's1', question: 'Once upon a time, there was a little girl named', answer: 'Lily' },
  { id: 's2', question: 'One day, Lily went to the', answer: 'park' },
);

describe('a benchmark file shared in a thread', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ script: importScript });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('is downloaded with the bot token and becomes a platform benchmark named after the file', async () => {
    const file = h.slack.shareFile({ name: 'stories.jsonl', content: STORIES, user: 'UALICE' });
    const mention = await h.mention({ user: 'UALICE', text: '<@UBOT> benchmark this on stories260K', files: [file] });
    const [post] = await h.waitForPosts(mention.ts, 1);
    expect(post!.text).toContain('Imported: {"benchmarkId":"stories","file":"stories.jsonl","questions":2');

    const downloads = h.slack.callsTo('files-pri');
    expect(downloads).toHaveLength(1);
    expect(downloads[0]).toMatchObject({ args: { file_id: file.id }, token: h.env.SLACK_BOT_TOKEN, status: 200 });
    const benchmark = await h.bot()!.platform.getBenchmark('stories');
    expect(benchmark).toMatchObject({ id: 'stories', questionCount: 2, description: '2 questions from the uploaded file stories.jsonl, read as our benchmark format' });
    // The listener stored only the file's description; the download happened in the turn.
    const trigger = await h.db.db.selectFrom('triggers').select('payload').where('team_id', '=', TEAM).where('dedupe_key', 'like', `%:${mention.ts}`).executeTakeFirstOrThrow();
    expect((trigger.payload as { files: unknown[] }).files).toEqual([
      { id: file.id, name: 'stories.jsonl', mimetype: 'text/plain', size: STORIES.length, url_private_download: file.url_private_download },
    ]);
  });

  it('reads an OpenAI evals file and tells the thread how it was read; a bad GSM8K file has each bad line named', async () => {
    const evals = jsonl(
      { input: [{ role: 'system', content: 'Finish the story.' }, { role: 'user', content: 'Once upon a time, there was a little girl named' }], ideal: ['Lily', 'Lucy'] },
      { input: 'One day, Lily went to the', ideal: 'park' },
    );
    const file = h.slack.shareFile({ name: 'my evals.jsonl', content: evals, user: 'UERIN' });
    const mention = await h.mention({ user: 'UERIN', text: '<@UBOT> benchmark this', files: [file] });
    const [post] = await h.waitForPosts(mention.ts, 1);
    // Slack's text escapes ">" as "&gt;".
    expect(post!.text.replaceAll('&gt;', '>')).toContain('"readAs":"OpenAI evals: input -> question (chat messages joined), ideal -> answer (a list: accepted answers), scorer exact"');
    expect((await h.bot()!.platform.getBenchmark('my-evals')).sourceFormat?.id).toBe('openai_evals');

    const gsm8k = jsonl({ question: 'What is 2 + 3?', answer: '2 + 3 = 5\n#### 5' }, { question: 'What is 1 + 1?', answer: 'two' });
    const badFile = h.slack.shareFile({ name: 'gsm8k.jsonl', content: gsm8k, user: 'UERIN' });
    await h.reply({ user: 'UERIN', text: 'and this one', threadTs: mention.ts, files: [badFile] });
    const posts = await h.waitForPosts(mention.ts, 2);
    expect(posts[1]!.text).toContain('Refused');
    expect(posts[1]!.text).toContain('read as GSM8K (Hugging Face rows)');
    expect(posts[1]!.text).toContain('line 2, field answer: does not end in');
  });

  it('is refused whole when bad, the thread told each bad line and field, and nothing stored', async () => {
    const mention = await h.mention({ user: 'UBOB', text: '<@UBOT> hello' });
    await h.waitForPosts(mention.ts, 1);
    const bad = h.slack.shareFile({ name: 'broken set.jsonl', content: '{"id": "1", "question": "q"}\n{"id": "1", "question": "q", "answer": "a", "scorer": "fuzzy"}\n', user: 'UBOB' });
    await h.reply({ user: 'UBOB', text: 'benchmark this one', threadTs: mention.ts, files: [bad] });
    const posts = await h.waitForPosts(mention.ts, 2);
    expect(posts[1]!.text).toContain('Refused');
    expect(posts[1]!.text).toContain('line 1, field answer: is required');
    expect(posts[1]!.text).toContain('line 2, field id: duplicate id');
    expect(posts[1]!.text).toContain('line 2, field scorer: unknown scorer');
    await expect(h.bot()!.platform.getBenchmark('broken-set')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('gets an id of its own when another file already took its name, and is not fetched when too large', async () => {
    const other = h.slack.shareFile({ name: 'stories.jsonl', content: jsonl({ id: 'x', question: 'The dog was very', answer: 'happy' }), user: 'UCAROL' });
    const mention = await h.mention({ user: 'UCAROL', text: '<@UBOT> benchmark this', files: [other] });
    const [post] = await h.waitForPosts(mention.ts, 1);
    const id = /"benchmarkId":"(stories-[0-9a-f]{8})"/.exec(post!.text)?.[1];
    expect(id, post!.text).toBeDefined();
    expect((await h.bot()!.platform.getBenchmark(id!)).questionCount).toBe(1);
    expect((await h.bot()!.platform.getBenchmark('stories')).questionCount).toBe(2);

    const before = h.slack.callsTo('files-pri').length;
    const huge = h.slack.shareFile({ name: 'huge.jsonl', content: STORIES, announcedSize: 50_000_000, user: 'UCAROL' });
    const second = await h.mention({ user: 'UCAROL', text: '<@UBOT> and this', files: [huge] });
    const [refused] = await h.waitForPosts(second.ts, 1);
    expect(refused!.text).toContain('Refused: The file "huge.jsonl" is 50000000 bytes');
    expect(h.slack.callsTo('files-pri')).toHaveLength(before);
  });

  it('says why when Slack will not give the file, and never sends the token off Slack', async () => {
    const hidden = h.slack.shareFile({ name: 'secret.jsonl', content: STORIES, user: 'UDAN', hiddenFromBot: true });
    const first = await h.mention({ user: 'UDAN', text: '<@UBOT> benchmark this', files: [hidden] });
    const [signIn] = await h.waitForPosts(first.ts, 1);
    expect(signIn!.text).toContain('Refused: Could not download "secret.jsonl": Slack answered with its sign-in page (the app needs the files:read scope');
    expect(h.slack.callsTo('files-pri').at(-1)).toMatchObject({ args: { file_id: hidden.id }, status: 200, response: expect.stringContaining('Sign in') });

    const before = h.slack.callsTo('files-pri').length;
    const elsewhere = { ...h.slack.shareFile({ name: 'away.jsonl', content: STORIES, user: 'UDAN' }), url_private_download: 'https://files.example.test/away.jsonl' };
    const second = await h.mention({ user: 'UDAN', text: '<@UBOT> and this', files: [elsewhere] });
    const [refused] = await h.waitForPosts(second.ts, 1);
    expect(refused!.text).toContain('is not on Slack (files.example.test); it was not fetched');
    expect(h.slack.callsTo('files-pri')).toHaveLength(before);
  });
});
