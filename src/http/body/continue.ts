import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { assertKnownOptions, countOption, invalidOption } from '../../internal/options.js';
import { DEFAULT_BODY_LIMIT, markBodyWithheld } from './body.js';

/** Options of {@link createCheckContinueHandler}. */
export interface CheckContinueOptions {
  /**
   * The largest body any route of the server reads, in bytes: a request that declares more
   * (`Content-Length`) gets no `100 Continue`, so its client never sends the body that the
   * route's reader will refuse with 413.
   * @defaultValue `DEFAULT_BODY_LIMIT` (1 MiB)
   */
  limit?: number;
}

const KNOWN_OPTIONS = ['limit'] as const satisfies readonly (keyof CheckContinueOptions)[];

const OWNER = 'createCheckContinueHandler()';

/**
 * A handler for a server's `'checkContinue'` event (`Expect: 100-continue`). node answers
 * `100 Continue` to every such request unless the event is handled; this one sends it only
 * to a request whose declared length is within `limit` (or that streams a chunked body,
 * which the body readers bound as it arrives), then hands the request to `listener`. Any
 * other request goes to `listener` without it: its final answer (a 413 from the body
 * reader, a 401 before the body is read) comes instead, as RFC 9110 §10.1.1 allows, and the
 * client keeps its body.
 *
 * @example
 * ```ts
 * const listener = toNodeListener(app);
 * const server = http.createServer(listener);
 * server.on('checkContinue', createCheckContinueHandler(listener));
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-10.1.1 | RFC 9110 §10.1.1}
 */
export function createCheckContinueHandler(
  listener: RequestListener,
  options: CheckContinueOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
  const limit = countOption(OWNER, 'limit', options.limit, DEFAULT_BODY_LIMIT, { min: 0 });
  if (typeof listener !== 'function') throw invalidOption(`${OWNER}: give the request listener`);
  return function checkContinue(req, res) {
    const declared = req.headers['content-length'];
    const length = declared === undefined ? undefined : Number(declared);
    if (length === undefined || (Number.isSafeInteger(length) && length <= limit)) {
      res.writeContinue();
    } else {
      markBodyWithheld(req);
    }
    listener(req, res);
  };
}
