// The form tokens and page-form plumbing of src/oauth/pages/form-token.ts, and the OAuth error
// plumbing of src/oauth/shared/errors.ts, at the edges the endpoint suites leave out: token syntax,
// clock skew, the pages option's checks, the page-form body limit and refusals, the hidden
// `ui_locales` field, `OAuthError`'s code and status, `sendOAuthError`'s challenge,
// `asOAuthError` and `dpopRefusal`. Everything is built inside each test (perTest coverage).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { DpopProofError } from '../../../src/auth/dpop/dpop.js';
import { HttpError } from '../../../src/core/errors/errors.js';
import type { OAuthContext } from '../../../src/oauth/context.js';
import {
  bodyErrorHeaders,
  createFormEndpoint,
  createFormTokens,
  FORM_TOKEN_FIELD,
  formKey,
  inPageLanguage,
  languageField,
  readPageForm,
  readPostedPageForm,
  resolvePages,
  singleValue,
} from '../../../src/oauth/pages/form-token.js';
import { defaultPages, type OAuthPages } from '../../../src/oauth/pages/render.js';
import {
  asOAuthError,
  CLIENT_CHALLENGE,
  dpopRefusal,
  NO_STORE,
  OAuthError,
  sendOAuthError,
} from '../../../src/oauth/protocol/errors.js';
import { closeAll, json, listen, request } from '../../helpers/http.js';

afterAll(closeAll);

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const KEY = 'k'.repeat(32);
const T0 = 1_700_000_000_000;

/** A listener that answers 500 with what it throws and ends what it leaves open (no request hangs). */
function safely(
  handler: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    Promise.resolve()
      .then(() => handler(req, res))
      .then(() => {
        if (!res.writableEnded) res.end('not answered');
      })
      .catch((err: unknown) => {
        if (!res.headersSent) res.statusCode = 500;
        res.end(String(err));
      });
  };
}

/** The TypeError a refused option throws. */
function optionError(message: string): TypeError {
  return Object.assign(new TypeError(message), { code: 'ERR_INVALID_OPTION' });
}

/** Form tokens on a clock the test moves. */
function tokensAt(start = T0) {
  const clock = { now: start };
  const tokens = createFormTokens('test', { key: KEY, ttl: 600_000, now: () => clock.now });
  return { clock, tokens };
}

describe('createFormTokens', () => {
  it('FORM_TOKEN_FIELD is csrf_token', () => {
    expect(FORM_TOKEN_FIELD).toBe('csrf_token');
  });

  it('refuses a short formKey, naming the option', () => {
    expect(() => formKey('portico.authorize', 'short')).toThrow(
      optionError('portico.authorize: `formKey` must be a string or bytes of 32 or more'),
    );
    expect(formKey('portico.authorize', KEY)).toEqual(Buffer.from(KEY));
  });

  it('verify refuses undefined and a token with text before or after it', () => {
    const { tokens } = tokensAt();
    const token = tokens.issue('consent', 'b', [['a', '1']]);
    expect(tokens.verify('consent', 'b', [['a', '1']], token)).toBe(true);
    expect(tokens.verify('consent', 'b', [['a', '1']], undefined)).toBe(false);
    expect(tokens.verify('consent', 'b', [['a', '1']], `x${token}`)).toBe(false);
    expect(tokens.verify('consent', 'b', [['a', '1']], `${token}x`)).toBe(false);
  });

  it('verify allows one minute of clock skew, not more', () => {
    const { clock, tokens } = tokensAt(T0 + 60_000);
    const minuteAhead = tokens.issue('consent', 'b', []);
    clock.now = T0 + 61_000;
    const secondMore = tokens.issue('consent', 'b', []);
    clock.now = T0;
    expect(tokens.verify('consent', 'b', [], minuteAhead)).toBe(true);
    expect(tokens.verify('consent', 'b', [], secondMore)).toBe(false);
  });

  it('verify refuses a token past its ttl', () => {
    const { clock, tokens } = tokensAt();
    const token = tokens.issue('consent', 'b', []);
    clock.now = T0 + 600_000;
    expect(tokens.verify('consent', 'b', [], token)).toBe(true);
    clock.now = T0 + 601_000;
    expect(tokens.verify('consent', 'b', [], token)).toBe(false);
  });
});

describe('resolvePages', () => {
  it('refuses null and a string as pages', () => {
    const message = 'portico.authorize: `pages` must be an object of render functions';
    expect(() => resolvePages('portico.authorize', null as unknown as Partial<OAuthPages>)).toThrow(
      optionError(message),
    );
    expect(() =>
      resolvePages('portico.authorize', 'signIn' as unknown as Partial<OAuthPages>),
    ).toThrow(optionError(message));
  });

  it('refuses an unknown page, listing the pages', () => {
    expect(() =>
      resolvePages('portico.authorize', { signin: () => '' } as unknown as Partial<OAuthPages>),
    ).toThrow(
      optionError(
        'portico.authorize: unknown page `signin`; pages are signIn, consent, deviceCode, deviceDone, logout, loggedOut, error',
      ),
    );
  });

  it('refuses a page that is not a function', () => {
    expect(() =>
      resolvePages('portico.authorize', { consent: '<p>' } as unknown as Partial<OAuthPages>),
    ).toThrow(optionError('portico.authorize: `pages.consent` must be a function returning HTML'));
  });

  it('keeps the defaults beside a replaced page and for an undefined one', () => {
    const consent = () => '<p>consent</p>';
    const pages = resolvePages('portico.authorize', { consent, signIn: undefined });
    expect(pages).toEqual({ ...defaultPages, consent });
    expect(pages.signIn).toBe(defaultPages.signIn);
    expect(pages.error).toBe(defaultPages.error);
    expect(Object.isFrozen(pages)).toBe(true);
  });
});

describe('languageField', () => {
  /** Answers the hidden fields a page of this request would carry on. */
  async function fieldsFor(path: string, acceptLanguage?: string) {
    const endpoint = createFormEndpoint('test', {} as OAuthContext, { formKey: KEY });
    const server = await listen(
      safely((req, res) => {
        const url = new URL(req.url ?? '/', 'http://localhost');
        const chosen = inPageLanguage(endpoint, req, url.searchParams);
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify(languageField(chosen)));
      }),
    );
    const headers = acceptLanguage === undefined ? {} : { 'Accept-Language': acceptLanguage };
    return json<unknown>(await request(server, path, { headers }));
  }

  it('carries ui_locales only when it chose the language', async () => {
    expect(await fieldsFor('/?ui_locales=fr')).toEqual([['ui_locales', 'fr']]);
    expect(await fieldsFor('/', 'fr')).toEqual([]);
    expect(await fieldsFor('/?ui_locales=de', 'fr')).toEqual([]);
  });

  it('carries nothing without a language', () => {
    const endpoint = createFormEndpoint('test', {} as OAuthContext, {});
    expect(languageField({ ...endpoint, fromUiLocales: true })).toStrictEqual([]);
    expect(languageField({ ...endpoint, fromUiLocales: false, language: 'fr' })).toStrictEqual([]);
    expect(languageField({ ...endpoint, fromUiLocales: true, language: 'fr' })).toStrictEqual([
      ['ui_locales', 'fr'],
    ]);
  });
});

describe('readPageForm / readPostedPageForm', () => {
  /** A server that answers what readPostedPageForm made of the post. */
  async function postedServer() {
    return listen(
      safely(async (req, res) => {
        const posted = await readPostedPageForm(req);
        res.setHeader('Content-Type', 'application/json');
        res.end(
          JSON.stringify(
            posted.kind === 'refused' || posted.kind === 'mixed'
              ? posted
              : { kind: posted.kind, form: [...posted.form] },
          ),
        );
      }),
    );
  }

  it('takes a password alone for a sign-in', async () => {
    const server = await postedServer();
    const reply = await request(server, '/', { method: 'POST', headers: FORM, body: 'password=x' });
    expect(json(reply)).toEqual({ kind: 'sign-in', form: [['password', 'x']] });
  });

  it('accepts 64 KiB and refuses one byte more', async () => {
    const server = await postedServer();
    const fill = (n: number) => `a=${'b'.repeat(n - 2)}`;
    const ok = await request(server, '/', { method: 'POST', headers: FORM, body: fill(65_536) });
    expect(json(ok)).toEqual({ kind: 'neither', form: [['a', 'b'.repeat(65_534)]] });
    const tooBig = await request(server, '/', {
      method: 'POST',
      headers: FORM,
      body: fill(65_537),
    });
    expect(json(tooBig)).toEqual({
      kind: 'refused',
      status: 413,
      detail: 'The request body is larger than the limit of 65536 bytes.',
      headers: {},
    });
  });

  it('throws a server error instead of returning it', async () => {
    const server = await listen(
      safely(async (req, res) => {
        // the body is consumed behind the parser's back: readForm fails with a 500
        req.resume();
        await new Promise((done) => req.once('end', done));
        let outcome: unknown;
        try {
          const form = await readPageForm(req);
          outcome = { returned: form instanceof HttpError ? form.status : String(form) };
        } catch (err) {
          const { status, code } = err as HttpError;
          outcome = { thrown: { http: err instanceof HttpError, status, code } };
        }
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify(outcome));
      }),
    );
    const reply = await request(server, '/', { method: 'POST', headers: FORM, body: 'a=b' });
    expect(json(reply)).toEqual({
      thrown: { http: true, status: 500, code: 'ERR_BODY_CONSUMED' },
    });
  });

  it('bodyErrorHeaders joins a list with a comma and a space', () => {
    const error = new HttpError(415, 'no', {
      headers: { 'Accept-Encoding': 'identity', Vary: ['Accept', 'Origin'] },
    });
    expect(bodyErrorHeaders(error)).toStrictEqual({
      'Accept-Encoding': 'identity',
      Vary: 'Accept, Origin',
    });
  });

  it('singleValue takes a value sent once, non-empty', () => {
    expect(singleValue(new URLSearchParams('a=1'), 'a')).toBe('1');
    expect(singleValue(new URLSearchParams('a=1&a=2'), 'a')).toBeUndefined();
    expect(singleValue(new URLSearchParams('a='), 'a')).toBeUndefined();
    expect(singleValue(new URLSearchParams(''), 'a')).toBeUndefined();
  });
});

describe('OAuthError and its answers', () => {
  it('has an ERR_OAUTH_ code, its cause, and the status of its error', () => {
    const cause = new Error('inner');
    const error = new OAuthError('invalid_grant', 'The code was used.', { cause });
    expect(error.code).toBe('ERR_OAUTH_INVALID_GRANT');
    expect(error.cause).toBe(cause);
    expect(error.status).toBe(400);
    expect(new OAuthError('invalid_client', 'x').status).toBe(401);
    expect(new OAuthError('invalid_token', 'x').status).toBe(401);
    expect(new OAuthError('server_error', 'x').status).toBe(500);
    expect(new OAuthError('temporarily_unavailable', 'x').status).toBe(503);
  });

  /** A server that answers the error with sendOAuthError. */
  async function sendServer(error: OAuthError, before?: (res: ServerResponse) => void) {
    return listen(
      safely((_req, res) => {
        before?.(res);
        sendOAuthError(res, error);
      }),
    );
  }

  it('a 401 without a challenge gets the Basic one', async () => {
    const server = await sendServer(new OAuthError('invalid_client', 'Who are you?'));
    const reply = await request(server, '/');
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toBe('Basic realm="token", error="invalid_client"');
    expect(CLIENT_CHALLENGE).toBe('Basic realm="token", error="invalid_client"');
    expect(reply.headers['cache-control']).toBe(NO_STORE['Cache-Control']);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(json(reply)).toEqual({ error: 'invalid_client', error_description: 'Who are you?' });
  });

  it('a 401 keeps its own challenge, one set before too', async () => {
    const own = await sendServer(
      new OAuthError('invalid_token', 'Expired.', {
        headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
      }),
    );
    expect((await request(own, '/')).headers['www-authenticate']).toBe(
      'Bearer error="invalid_token"',
    );
    const before = await sendServer(new OAuthError('invalid_client', 'No.'), (res) =>
      res.setHeader('WWW-Authenticate', 'DPoP algs="ES256"'),
    );
    expect((await request(before, '/')).headers['www-authenticate']).toBe('DPoP algs="ES256"');
  });

  it('a 400 carries no challenge', async () => {
    const server = await sendServer(new OAuthError('invalid_grant', 'Used.'));
    const reply = await request(server, '/');
    expect(reply.status).toBe(400);
    expect(reply.headers['www-authenticate']).toBeUndefined();
    expect(json(reply)).toEqual({ error: 'invalid_grant', error_description: 'Used.' });
  });

  it('asOAuthError: a 503 without Retry-After has no headers', () => {
    const answer = asOAuthError(new HttpError(503, 'Store down.'));
    expect(answer?.error).toBe('temporarily_unavailable');
    expect(answer?.status).toBe(503);
    expect(answer?.message).toBe('Store down.');
    expect(answer?.headers).toStrictEqual({});
    const later = asOAuthError(new HttpError(429, 'Slow.', { headers: { 'Retry-After': '7' } }));
    expect(later?.status).toBe(429);
    expect(later?.headers).toStrictEqual({ 'Retry-After': '7' });
  });

  it('dpopRefusal: DPoP-Nonce only with a nonce', () => {
    const withNonce = dpopRefusal(
      new DpopProofError('use_dpop_nonce', 'Use the nonce.', { nonce: 'n-1' }),
    );
    expect(withNonce.error).toBe('use_dpop_nonce');
    expect(withNonce.message).toBe('Use the nonce.');
    expect(withNonce.status).toBe(400);
    expect(withNonce.headers).toStrictEqual({ 'DPoP-Nonce': 'n-1' });
    const without = dpopRefusal(new DpopProofError('invalid_dpop_proof', 'Bad proof.'));
    expect(without.error).toBe('invalid_dpop_proof');
    expect(without.headers).toStrictEqual({});
  });
});
