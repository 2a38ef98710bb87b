import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  checkConditional,
  compose,
  createETag,
  type FieldError,
  forbidden,
  getParams,
  gone,
  type MethodTable,
  type Middleware,
  notFound,
  readJson,
  requirePrincipal,
  requireScopes,
  sendJson,
  sendNoContent,
  unprocessable,
} from 'portico';

/** A message as the API shows it. */
export interface Message {
  id: string;
  text: string;
  channel: string;
  from: string;
  createdAt: string;
}

/** A message with its validators; deleted ones are kept (so that they answer 410). */
export interface Stored {
  message: Message;
  /** Last change, in whole seconds (HTTP dates have no finer precision). */
  modified: Date;
  etag: string;
  deleted: boolean;
}

/** Where messages live: this process's memory, or Redis (shared-state.ts). */
export interface MessageRepository {
  get(id: string): Promise<Stored | undefined>;
  put(stored: Stored): Promise<void>;
  /** Every message, oldest first. */
  list(): Promise<Stored[]>;
}

/** The in-memory repository (one process). */
export function memoryMessages(): MessageRepository {
  const messages = new Map<string, Stored>();
  return {
    get: async (id) => messages.get(id),
    put: async (stored) => {
      messages.set(stored.message.id, stored);
    },
    list: async () => [...messages.values()],
  };
}

const MAX_TEXT = 1000;
const MAX_CHANNEL = 100;
const DEFAULT_CHANNEL = 'general';

type Fields = { text?: string; channel?: string };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** True when `value` holds a C0 control character or DEL. */
function hasControlCharacter(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

interface FieldRule {
  max: number;
  /** What the value may not contain, with the words for it. */
  refuse?: { test: (value: string) => boolean; words: string };
}

const RULES: Record<keyof Fields, FieldRule> = {
  text: { max: MAX_TEXT },
  channel: { max: MAX_CHANNEL, refuse: { test: hasControlCharacter, words: 'control characters' } },
};

/** Checks the fields of a message body; `required` lists the ones that must be present. */
function validate(body: unknown, required: readonly (keyof Fields)[]): Fields {
  if (!isObject(body)) {
    throw unprocessable([{ field: '', message: 'The body must be a JSON object.' }]);
  }
  const errors: FieldError[] = [];
  const fields: Fields = {};
  for (const field of Object.keys(RULES) as (keyof Fields)[]) {
    const value = body[field];
    const rule = RULES[field];
    if (value === undefined) {
      if (required.includes(field)) errors.push({ field, message: 'is required' });
      continue;
    }
    if (typeof value !== 'string') {
      errors.push({ field, message: 'must be a string' });
      continue;
    }
    const length = [...value].length;
    if (length < 1 || length > rule.max || rule.refuse?.test(value)) {
      const without = rule.refuse ? ` without ${rule.refuse.words}` : '';
      errors.push({ field, message: `must be 1–${rule.max} characters long${without}` });
      continue;
    }
    fields[field] = value;
  }
  if (errors.length > 0) throw unprocessable(errors);
  return fields;
}

/** The scope that reading messages needs: on `/api/messages`, `/events`, `/ws` subscriptions and webhooks. */
export const READ_MESSAGES = 'read:messages';

/** Lets through a principal that may read messages (403 `insufficient_scope` otherwise). */
export const READ = requireScopes([READ_MESSAGES]);
const WRITE = requireScopes(['write:messages']);

/** Reading needs `read:messages`, changing needs `write:messages` (full-rights principals hold both). */
function withScopes(table: MethodTable): MethodTable {
  const guarded: Record<string, Middleware> = {};
  for (const [method, handler] of Object.entries(table)) {
    if (handler) guarded[method] = compose([method === 'GET' ? READ : WRITE, handler]);
  }
  return guarded;
}

/** Called with each message created, e.g. to fan it out to live subscribers. */
export type MessageListener = (message: Message) => void;

/** Told of a change before it is answered (what it publishes and redacts is done by then). */
export type MessageChangeListener = (message: Message, previous: Message) => Promise<void>;

/**
 * The `/api/messages` resource: an in-memory store (deleted messages are remembered so
 * that they answer 410) and its handlers.
 */
export function createMessages(
  options: {
    onCreate?: MessageListener;
    /** A message replaced or patched: `message.updated`, and its older versions redacted. */
    onUpdate?: MessageChangeListener;
    /** A message deleted: its text leaves the replay history, `message.deleted` follows. */
    onDelete?: (message: Message) => Promise<void>;
    repository?: MessageRepository;
  } = {},
) {
  const messages = options.repository ?? memoryMessages();

  async function store(message: Message): Promise<Stored> {
    const stored: Stored = {
      message,
      modified: new Date(Math.floor(Date.now() / 1000) * 1000),
      etag: createETag(JSON.stringify(message)),
      deleted: false,
    };
    await messages.put(stored);
    return stored;
  }

  async function find(req: IncomingMessage): Promise<Stored> {
    const id = getParams(req).id ?? '';
    const stored = await messages.get(id);
    if (stored === undefined) throw notFound(`No message has the id ${JSON.stringify(id)}.`);
    if (stored.deleted) throw gone(`The message ${id} was deleted.`);
    return stored;
  }

  /**
   * The message of the request, for a change: its author may change or delete it, and so may
   * an admin and a service (a client-credentials token, which acts for no user); another
   * user gets 403.
   */
  async function findToChange(req: IncomingMessage): Promise<Stored> {
    const stored = await find(req);
    const { sub, role } = requirePrincipal(req);
    if (role !== undefined && role !== 'admin' && sub !== stored.message.from) {
      throw forbidden('Only its author or an admin may change or delete this message.', {
        code: 'ERR_NOT_AUTHOR',
      });
    }
    return stored;
  }

  /** A new message of `body` (checked as POST /api/messages checks it, 422 otherwise) by `from`, stored. */
  async function add(body: unknown, from: string): Promise<Stored> {
    const fields = validate(body, ['text']);
    return store({
      id: randomUUID(),
      text: fields.text!,
      channel: fields.channel ?? DEFAULT_CHANNEL,
      from,
      createdAt: new Date().toISOString(),
    });
  }

  function validators(stored: Stored) {
    return { etag: stored.etag, lastModified: stored.modified };
  }

  function answer(res: ServerResponse, status: number, stored: Stored, location?: string) {
    sendJson(res, status, stored.message, {
      ETag: stored.etag,
      'Last-Modified': stored.modified.toUTCString(),
      ...(location === undefined ? {} : { Location: location }),
    });
  }

  const collection: MethodTable = {
    async GET(req, res) {
      const channel = new URL(req.url ?? '/', 'http://x').searchParams.get('channel');
      const list: Message[] = [];
      for (const stored of await messages.list()) {
        if (!stored.deleted && (channel === null || stored.message.channel === channel)) {
          list.push(stored.message);
        }
      }
      sendJson(res, 200, list);
    },
    async POST(req, res) {
      const stored = await add(await readJson(req), requirePrincipal(req).sub);
      const { message } = stored;
      answer(res, 201, stored, `/api/messages/${message.id}`);
      options.onCreate?.(message);
    },
  };

  const item: MethodTable = {
    async GET(req, res) {
      const stored = await find(req);
      if (checkConditional(req, res, validators(stored))) return;
      answer(res, 200, stored);
    },
    async PUT(req, res) {
      const stored = await findToChange(req);
      if (checkConditional(req, res, validators(stored))) return;
      const fields = validate(await readJson(req), ['text', 'channel']);
      const updated = await store({
        ...stored.message,
        text: fields.text!,
        channel: fields.channel!,
      });
      await options.onUpdate?.(updated.message, stored.message);
      answer(res, 200, updated);
    },
    async PATCH(req, res) {
      const stored = await findToChange(req);
      if (checkConditional(req, res, validators(stored))) return;
      const body = await readJson(req);
      const fields = validate(body, []);
      if (fields.text === undefined && fields.channel === undefined) {
        throw unprocessable([{ field: '', message: 'Send at least one of text, channel.' }]);
      }
      const updated = await store({ ...stored.message, ...fields });
      await options.onUpdate?.(updated.message, stored.message);
      answer(res, 200, updated);
    },
    async DELETE(req, res) {
      const stored = await findToChange(req);
      if (checkConditional(req, res, validators(stored))) return;
      await messages.put({ ...stored, deleted: true });
      await options.onDelete?.(stored.message);
      sendNoContent(res);
    },
  };

  return {
    routes: {
      '/api/messages': withScopes(collection),
      '/api/messages/:id': withScopes(item),
    },
    /**
     * Creates a message exactly as `POST /api/messages` does (same checks: an `HttpError` 422
     * with its field errors otherwise), by `from`, and tells `onCreate` (streams, /ws, webhooks).
     */
    async create(body: unknown, from: string): Promise<Message> {
      const { message } = await add(body, from);
      options.onCreate?.(message);
      return message;
    },
    /** The newest `limit` messages not deleted (of `channel` only, when given), oldest first. */
    async latest(limit: number, channel?: string): Promise<Message[]> {
      const list: Message[] = [];
      for (const stored of await messages.list()) {
        if (!stored.deleted && (channel === undefined || stored.message.channel === channel)) {
          list.push(stored.message);
        }
      }
      return list.slice(-limit);
    },
  };
}
