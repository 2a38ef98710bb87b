// The pages of `/device/verify`: the sign-in form, the code form (with the device of a known
// code), the page after a decision, and the error pages.
import type { ServerResponse } from 'node:http';
import type { SessionRecord } from '../auth/session-store.js';
import { FORM_TOKEN_FIELD, type FormEndpoint, sessionBinding } from './form-token.js';
import { type FormFields, sendPage } from './pages.js';
import { signInChallenge } from './sign-in-form.js';
import { formatUserCode } from './user-code.js';
import type { PendingDeviceCode, UserCodeAttempts } from './user-code-attempts.js';

/** What the steps of the device verification page share, built once by its factory. */
export interface DeviceVerifier extends FormEndpoint {
  /** The per-user budget of user codes. */
  readonly attempts: UserCodeAttempts;
}

/** The hidden input that names the user code whose device the page showed. */
export const SHOWN_FIELD = 'shown_user_code';

/** The message of a code that is unknown, already decided or expired. */
export const BAD_CODE = 'That code is not valid or has expired. Check the code your device shows.';

const CANNOT = 'This request cannot be completed';

/** What the code form shows: a typed code, or the device of a found one, and a message. */
export interface CodeFormView {
  typed?: string;
  found?: PendingDeviceCode;
  message?: string;
  status?: number;
}

/** An error page of the verifier's `pages.error`. */
export function deviceErrorPage(
  verifier: DeviceVerifier,
  res: ServerResponse,
  status: number,
  message: string,
  headers?: Record<string, string>,
  title = CANNOT,
): void {
  sendPage(res, status, verifier.pages.error({ status, title, message }), { headers });
}

/** The 429 page of a user past their budget of codes, with `Retry-After` in seconds. */
export function tooManyCodes(verifier: DeviceVerifier, res: ServerResponse, seconds: number) {
  deviceErrorPage(
    verifier,
    res,
    429,
    `Too many codes tried. Wait ${Math.ceil(seconds / 60)} minute(s) and try again.`,
    { 'Retry-After': String(seconds) },
    'Too many attempts',
  );
}

/** The page of a form that expired or was changed. */
export function expiredForm(verifier: DeviceVerifier, res: ServerResponse) {
  deviceErrorPage(verifier, res, 400, 'This form has expired or was changed. Open the page again.');
}

/** The sign-in form, carrying the code to show once signed in. */
export function showDeviceSignIn(
  verifier: DeviceVerifier,
  res: ServerResponse,
  status: number,
  userCode: string | undefined,
  message?: string,
  username?: string,
): void {
  const fields: FormFields = userCode === undefined ? [] : [['user_code', userCode]];
  const html = verifier.pages.signIn({
    error: message,
    username,
    hidden: [...fields, [FORM_TOKEN_FIELD, verifier.tokens.issue('device-signin', '', fields)]],
  });
  const headers = status === 401 ? signInChallenge(verifier.ctx) : undefined;
  sendPage(res, status, html, { headers });
}

/** The code form; with a found code, its device shown and the form token bound to it. */
export async function showCodeForm(
  verifier: DeviceVerifier,
  res: ServerResponse,
  session: SessionRecord,
  view: CodeFormView,
): Promise<void> {
  const record = view.found?.record;
  const fields: FormFields = record === undefined ? [] : [[SHOWN_FIELD, record.userCode]];
  const client = record === undefined ? undefined : await verifier.ctx.clients.get(record.clientId);
  const html = verifier.pages.deviceCode({
    user: { sub: session.sub, name: session.name },
    userCode: record === undefined ? view.typed : formatUserCode(record.userCode),
    clientId: record?.clientId,
    clientName: record === undefined ? undefined : (client?.name ?? record.clientId),
    scopes: record?.scope,
    error: view.message,
    hidden: [
      ...fields,
      [FORM_TOKEN_FIELD, verifier.tokens.issue('device', sessionBinding(session), fields)],
    ],
  });
  sendPage(res, view.status ?? 200, html);
}

/** Records the user's decision on a pending code, and shows the page after it. */
export async function recordDecision(
  verifier: DeviceVerifier,
  res: ServerResponse,
  session: SessionRecord,
  { hash, record }: PendingDeviceCode,
  approved: boolean,
): Promise<void> {
  const { ctx, pages } = verifier;
  await ctx.store.updateDeviceCode(
    hash,
    approved
      ? {
          ...record,
          status: 'approved',
          sub: session.sub,
          authTime: Math.floor(session.createdAt / 1000),
        }
      : { ...record, status: 'denied' },
  );
  const client = await ctx.clients.get(record.clientId);
  sendPage(res, 200, pages.deviceDone({ approved, clientName: client?.name ?? record.clientId }));
}
