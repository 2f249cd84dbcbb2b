// Files: the bot's uploads (files.getUploadURLExternal, the upload URL, files.completeUploadExternal)
// and files users shared, served at their url_private_download to a request with the bot's token.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Workspace } from './state.js';
import type { FakeFile, ShareFileInput, SlackCall, SlackEventFile } from './types.js';
import { fail, isObj, ok, parseMultipart, readBody, str, type MethodHandler } from './wire.js';

export interface FileRoutes {
  methods: Record<string, MethodHandler>;
  handleUpload(req: IncomingMessage, res: ServerResponse, fileId: string, token: string | undefined): Promise<void>;
  /** GET of a shared file's url_private(_download): the bytes with a known token, Slack's sign-in page otherwise. */
  handleFileDownload(res: ServerResponse, fileId: string, token: string | undefined): void;
  shareFile(input: ShareFileInput): SlackEventFile;
}

export function fileRoutes(ws: Workspace, record: (call: SlackCall) => void): FileRoutes {
  let sharedCounter = 0;
  const methods: Record<string, MethodHandler> = {
    'files.getUploadURLExternal': ({ args }) => {
      const filename = str(args.filename);
      const length = Number(args.length);
      if (!filename || !Number.isInteger(length) || length < 0) return fail('invalid_arguments');
      const id = ws.nextId('F');
      ws.files.set(id, { id, filename, declaredLength: length, content: Buffer.alloc(0), completed: false });
      return ok({ upload_url: `${ws.baseUrl}/upload/${id}`, file_id: id });
    },
    'files.completeUploadExternal': ({ method, args, team }) => {
      const list = Array.isArray(args.files) ? args.files : undefined;
      if (!list || list.length === 0) return fail('invalid_arguments');
      const entries: FakeFile[] = [];
      for (const item of list) {
        const file = isObj(item) ? ws.files.get(String(item.id)) : undefined;
        if (!file) return fail('file_not_found');
        if (file.content.length === 0 && file.declaredLength > 0) {
          ws.violations.push(`${method}: file ${file.id} completed before its bytes were uploaded`);
          return fail('file_not_found');
        }
        if (isObj(item) && typeof item.title === 'string') file.title = item.title;
        entries.push(file);
      }
      const channel = str(args.channel_id) ?? str(args.channels)?.split(',')[0];
      const threadTs = str(args.thread_ts);
      const comment = str(args.initial_comment);
      for (const file of entries) {
        file.completed = true;
        if (channel) file.channelId = channel;
        if (threadTs) file.threadTs = threadTs;
        if (comment) file.initialComment = comment;
      }
      if (channel) {
        ws.messages.push({
          channel,
          ts: ws.nextTs(),
          ...(threadTs ? { threadTs } : {}),
          user: team.botUserId,
          botId: team.botId,
          appId: team.appId,
          team: team.teamId,
          text: comment ?? '',
          files: entries.map((f) => ({ id: f.id, name: f.filename, ...(f.title ? { title: f.title } : {}) })),
          updates: 0,
          seeded: false,
        });
      }
      return ok({
        files: entries.map((f) => ({
          id: f.id,
          name: f.filename,
          title: f.title ?? f.filename,
          size: f.content.length,
          url_private: `${ws.baseUrl}/files/${f.id}/${encodeURIComponent(f.filename)}`,
          permalink: `https://${team.domain}.slack.test/files/${team.botUserId}/${f.id}/${encodeURIComponent(f.filename)}`,
        })),
      });
    },
  };

  /** POST of the bytes to an upload_url: stores them, and records a length other than the one announced. */
  const handleUpload = async (req: IncomingMessage, res: ServerResponse, fileId: string, token: string | undefined): Promise<void> => {
    const body = await readBody(req);
    const file = ws.files.get(fileId);
    const contentType = req.headers['content-type'] ?? '';
    let content = body;
    if (contentType.toLowerCase().startsWith('multipart/form-data')) {
      const parts = parseMultipart(body, contentType);
      const part = parts.find((p) => p.filename !== undefined) ?? parts.find((p) => p.name === 'file' || p.name === 'body');
      content = part?.data ?? Buffer.alloc(0);
    }
    const status = file ? 200 : 404;
    const text = file ? `OK - ${content.length}` : 'file not found';
    if (file) {
      file.content = Buffer.from(content);
      if (content.length !== file.declaredLength) {
        ws.violations.push(`upload: file ${fileId} sent ${content.length} bytes but files.getUploadURLExternal announced ${file.declaredLength}`);
      }
    }
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(text);
    record({ method: 'upload', args: { file_id: fileId, bytes: content.length }, at: Date.now(), ...(token ? { token } : {}), status, response: text });
  };

  const handleFileDownload = (res: ServerResponse, fileId: string, token: string | undefined): void => {
    const shared = ws.sharedFiles.get(fileId);
    const known = token !== undefined && ws.teamFor(token) !== undefined;
    let status = 200;
    let response: string;
    if (!shared) {
      status = 404;
      response = 'file not found';
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(response);
    } else if (!known || shared.hidden) {
      response = '<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in to your workspace</body></html>';
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(response);
    } else {
      response = `${shared.content.length} bytes`;
      res.writeHead(200, {
        'content-type': shared.file.mimetype,
        'content-length': String(shared.content.length),
        'content-disposition': `attachment; filename="${shared.file.name}"`,
      }).end(shared.content);
    }
    record({ method: 'files-pri', args: { file_id: fileId }, at: Date.now(), ...(token ? { token } : {}), status, response });
  };

  /** Stores a file as if a user had uploaded it; returns its `files[]` entry for an event. */
  const shareFile = (input: ShareFileInput): SlackEventFile => {
    sharedCounter += 1;
    const id = `F${String(sharedCounter).padStart(10, '0')}`;
    const content = Buffer.isBuffer(input.content) ? input.content : Buffer.from(input.content, 'utf8');
    const now = Math.floor(Date.now() / 1000);
    const team = ws.defaultTeam.teamId;
    const encoded = encodeURIComponent(input.name);
    const extension = /\.([A-Za-z0-9]+)$/.exec(input.name)?.[1]?.toLowerCase() ?? 'text';
    const file: SlackEventFile = {
      id,
      created: now,
      timestamp: now,
      name: input.name,
      title: input.name,
      mimetype: input.mimetype ?? 'text/plain',
      filetype: extension === 'jsonl' ? 'text' : extension,
      pretty_type: extension === 'jsonl' ? 'Plain Text' : extension.toUpperCase(),
      user: input.user ?? 'UUSER',
      user_team: team,
      editable: true,
      size: input.announcedSize ?? content.length,
      mode: 'hosted',
      is_external: false,
      external_type: '',
      is_public: true,
      public_url_shared: false,
      display_as_bot: false,
      username: '',
      url_private: `${ws.baseUrl}/files-pri/${team}-${id}/${encoded}`,
      url_private_download: `${ws.baseUrl}/files-pri/${team}-${id}/download/${encoded}`,
      permalink: `https://${ws.defaultTeam.domain}.slack.test/files/${input.user ?? 'UUSER'}/${id}/${encoded}`,
      permalink_public: `https://slack-files.test/${team}-${id}-0000000000`,
      has_rich_preview: false,
      file_access: 'visible',
    };
    ws.sharedFiles.set(id, { file, content, hidden: input.hiddenFromBot ?? false });
    return file;
  };

  return { methods, handleUpload, handleFileDownload, shareFile };
}
