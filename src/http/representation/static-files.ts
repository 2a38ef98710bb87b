import { type FileHandle, open, realpath, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Middleware, Next } from '../../core/compose.js';
import { badRequest, notFound } from '../../core/errors/errors.js';
import { sendRedirect } from '../../core/send.js';
import { hasLineBreak, isFieldValue } from '../../internal/grammar.js';
import { assertKnownOptions, booleanOption, invalidOption } from '../../internal/options.js';
import { splitTarget } from '../../internal/target.js';
import { getPathname } from '../routing/request-path.js';
import type { ParseRangeOptions } from './range.js';
import { sendRepresentation } from './representation.js';

/**
 * Options of {@link serveStatic}.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-14 | RFC 9110 §14}
 */
export interface ServeStaticOptions {
  /**
   * The URL path the folder is served under; other paths go to `next()`.
   * @defaultValue `'/'`
   */
  prefix?: string;
  /**
   * The file served for a directory (whose URL ends with `/`; without it, a 308 adds the
   * slash), or `false` to serve no directory.
   * @defaultValue `'index.html'`
   */
  index?: string | false;
  /**
   * What a path with no file behind it gets: `true` calls `next()` (a router after it may
   * answer, else the adapter's 404), `false` throws a 404 problem. Dotfiles and refused
   * paths (`..`, encoded slashes) count as missing.
   * @defaultValue `true`
   */
  fallthrough?: boolean;
  /** The `Cache-Control` of every file. @defaultValue `'no-cache'` (revalidate with the ETag) */
  cacheControl?: string;
  /** Further headers of every file answer. @defaultValue none */
  headers?: Readonly<Record<string, string>>;
  /** Media types by extension (`'.md': 'text/markdown; charset=utf-8'`), over the built-in ones. @defaultValue none */
  types?: Readonly<Record<string, string>>;
  /** The limits on `Range` fields. @defaultValue those of {@link ParseRangeOptions} */
  range?: ParseRangeOptions;
}

const UTF8 = '; charset=utf-8';
const TYPES: Readonly<Record<string, string>> = {
  '.html': `text/html${UTF8}`,
  '.htm': `text/html${UTF8}`,
  '.css': `text/css${UTF8}`,
  '.js': `text/javascript${UTF8}`,
  '.mjs': `text/javascript${UTF8}`,
  '.json': `application/json${UTF8}`,
  '.map': `application/json${UTF8}`,
  '.txt': `text/plain${UTF8}`,
  '.csv': `text/csv${UTF8}`,
  '.xml': `application/xml${UTF8}`,
  '.svg': `image/svg+xml${UTF8}`,
  '.webmanifest': `application/manifest+json${UTF8}`,
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.wasm': 'application/wasm',
  '.pdf': 'application/pdf',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.mp3': 'audio/mpeg',
};
const OCTETS = 'application/octet-stream';
const OPTIONS = [
  'prefix',
  'index',
  'fallthrough',
  'cacheControl',
  'headers',
  'types',
  'range',
] as const satisfies readonly (keyof ServeStaticOptions)[];

/** What the URL path names: path segments under the root, `undefined` when refused. */
type Target = { segments: string[]; directory: boolean } | undefined;

/**
 * The decoded segments of `path` (below the prefix). A segment that is empty (`//`) is
 * skipped; one that is `.`/`..`, a dotfile, or holds `/`, `\` or `:` once decoded is refused;
 * malformed percent-encoding or a NUL is a 400.
 */
function segmentsOf(path: string): Target {
  const segments: string[] = [];
  for (const raw of path.split('/')) {
    if (raw === '') continue;
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      throw badRequest('The path is not valid percent-encoding.', { code: 'ERR_INVALID_PATH' });
    }
    if (segment.includes('\0'))
      throw badRequest('The path holds a NUL.', { code: 'ERR_INVALID_PATH' });
    if (segment.startsWith('.') || /[/\\:]/.test(segment)) return undefined;
    segments.push(segment);
  }
  return { segments, directory: path.endsWith('/') };
}

function contentType(file: string, types: Readonly<Record<string, string>>): string {
  return types[extname(file).toLowerCase()] ?? OCTETS;
}

/** Whether `path` is `root` or inside it. */
function within(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** Resolves the file of `segments`, following symlinks only within the root. */
async function locate(root: string, segments: readonly string[]) {
  const joined = join(root, ...segments);
  if (!within(root, joined)) return undefined;
  try {
    const real = await realpath(joined);
    const realRoot = await realpath(root);
    const inside = relative(realRoot, real);
    if (!within(realRoot, real) || inside.split(sep).some((s) => s.startsWith('.'))) {
      return undefined; // out of the root, or a dotfile, once symlinks are followed
    }
    return { path: real, stats: await stat(real) };
  } catch {
    return undefined; // missing, unreadable, a loop: not served
  }
}

/** Serves the regular file at `path` through one file handle, closed once answered. */
async function serveFile(
  req: IncomingMessage,
  res: ServerResponse,
  next: Next,
  path: string,
  settings: ReturnType<typeof settingsOf>,
): Promise<void> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch {
    return settings.missing(next);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) return await settings.missing(next); // replaced since it was looked up
    const { size, mtimeMs } = stats;
    await sendRepresentation(
      req,
      res,
      { size, stream: (start, end) => handle.createReadStream({ start, end, autoClose: false }) },
      {
        contentType: contentType(path, settings.types),
        etag: `"${size.toString(16)}-${Math.floor(mtimeMs).toString(16)}"`,
        lastModified: mtimeMs,
        headers: settings.headers,
        range: settings.range,
      },
    );
  } finally {
    await handle.close();
  }
}

function settingsOf(root: string | URL, options: ServeStaticOptions) {
  const owner = 'serveStatic()';
  assertKnownOptions(owner, options, OPTIONS);
  if (typeof root !== 'string' && !(root instanceof URL)) {
    throw invalidOption(`${owner}: the root must be a path or a file: URL`);
  }
  const prefix = (options.prefix ?? '/').replace(/\/+$/, '');
  if (options.prefix !== undefined && !options.prefix.startsWith('/')) {
    throw invalidOption(`${owner}: \`prefix\` must start with /`);
  }
  const index = options.index ?? 'index.html';
  if (index !== false && (typeof index !== 'string' || segmentsOf(`/${index}`) === undefined)) {
    throw invalidOption(`${owner}: \`index\` must be a file name or false`);
  }
  const cacheControl = options.cacheControl ?? 'no-cache';
  for (const value of [cacheControl, ...Object.values(options.headers ?? {})]) {
    if (typeof value !== 'string' || hasLineBreak(value)) {
      throw invalidOption(`${owner}: header values must be strings without CR, LF or NUL`);
    }
    if (!isFieldValue(value)) {
      throw invalidOption(
        `${owner}: header values must be tab, space, visible ASCII or 0x80–0xFF: no control character`,
      );
    }
  }
  const fallthrough = booleanOption(owner, 'fallthrough', options.fallthrough, true);
  return {
    root: resolve(typeof root === 'string' ? root : fileURLToPath(root)),
    prefix,
    index,
    headers: { 'Cache-Control': cacheControl, ...options.headers },
    types: { ...TYPES, ...options.types },
    range: options.range,
    missing(next: Next): Promise<void> {
      if (fallthrough) return next();
      throw notFound('Nothing is served at this path.');
    },
  };
}

/**
 * Serves the files under a folder on GET and HEAD (other methods go to `next()`): strong
 * `ETag` from the size and modification time (hex, `"<size>-<mtime ms>"`), `Last-Modified`,
 * `Cache-Control` (`no-cache` unless told), media types from a built-in table (text types in
 * UTF-8), conditional requests and byte ranges through {@link sendRepresentation}, the file
 * streamed from disk. Never serves outside the folder: each decoded segment is checked
 * (`..`, dotfiles, encoded `/` or `\`, `:` are refused; a NUL or malformed percent-encoding
 * is a 400), the joined path must lie in the folder, and so must its real path (a symlink
 * leading out is not followed). A missing or refused path calls `next()`, or throws a 404
 * with `fallthrough: false`.
 *
 * @example
 * ```ts
 * createServer(toNodeListener([serveStatic(new URL('./public/', import.meta.url), { prefix: '/assets' }), routes])).listen(3000);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-14 | RFC 9110 §14}
 */
export function serveStatic(root: string | URL, options: ServeStaticOptions = {}): Middleware {
  const settings = settingsOf(root, options);
  return async function staticFiles(req, res, next) {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const path = getPathname(req); // a path readers could take differently is a 400 here
    const { search } = splitTarget(req.url ?? '/');
    const rest = path.slice(settings.prefix.length);
    if (!path.startsWith(settings.prefix) || (rest !== '' && !rest.startsWith('/'))) {
      return next();
    }
    const target = segmentsOf(rest);
    if (target === undefined) return settings.missing(next);
    const found = await locate(settings.root, target.segments);
    if (found?.stats.isDirectory() && settings.index !== false) {
      if (!target.directory) {
        const location = [settings.prefix, ...target.segments.map(encodeURIComponent)].join('/');
        return sendRedirect(res, 308, `${location}/${search}`);
      }
      const file = await locate(settings.root, [...target.segments, settings.index]);
      if (file?.stats.isFile()) return serveFile(req, res, next, file.path, settings);
    } else if (found?.stats.isFile() && !target.directory) {
      return serveFile(req, res, next, found.path, settings);
    }
    return settings.missing(next);
  };
}
