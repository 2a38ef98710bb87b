// The pages of `/device/verify`: the sign-in form, the code form (with the device of a known
// code), the page after a decision, and the error pages.
import type { ServerResponse } from 'node:http';
import type { SessionRecord } from '../../auth/session/store.js';
import { approveGrant } from '../consents.js';
import { deviceCodes } from '../store/records.js';
import type { PendingDeviceCode, UserCodeAttempts } from '../user-codes/attempts.js';
import { formatUserCode } from '../user-codes/format.js';
import {
  FORM_TOKEN_FIELD,
  type FormEndpoint,
  languageField,
  sessionBinding,
} from './form-token.js';
import { localizeMessage } from './messages.js';
import { type FormFields, sendPage } from './render.js';
import { signInChallenge } from './sign-in-form.js';

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

/** An error page of the verifier's `pages.error`, in the verifier's language. */
export function deviceErrorPage(
  verifier: DeviceVerifier,
  res: ServerResponse,
  status: number,
  message: string,
  headers?: Record<string, string>,
  title = CANNOT,
): void {
  const { language = 'en' } = verifier;
  const data = {
    status,
    title: localizeMessage(language, title),
    message: localizeMessage(language, message),
    language,
  };
  sendPage(res, status, verifier.pages.error(data), { headers, language });
}

/** The 429 page of a user past their budget of codes, with `Retry-After` in seconds. */
export function tooManyCodes(verifier: DeviceVerifier, res: ServerResponse, seconds: number) {
  deviceErrorPage(
    verifier,
    res,
    429,
    localizeMessage(
      verifier.language,
      'Too many codes tried. Wait {minutes} minute(s) and try again.',
      { minutes: String(Math.ceil(seconds / 60)) },
    ),
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
  const { language = 'en' } = verifier;
  const html = verifier.pages.signIn({
    error: message === undefined ? undefined : localizeMessage(language, message),
    username,
    hidden: [
      ...fields,
      ...languageField(verifier),
      [FORM_TOKEN_FIELD, verifier.tokens.issue('device-signin', '', fields)],
    ],
    links: verifier.ctx.signInLinks(
      `${new URL(res.req?.url ?? '/', 'http://x').pathname}${userCode === undefined ? '' : `?user_code=${encodeURIComponent(userCode)}`}`,
    ),
    language,
  });
  const headers = status === 401 ? signInChallenge(verifier.ctx) : undefined;
  sendPage(res, status, html, { headers, language });
}

/** The code form; with a found code, its device shown and the form token bound to it. */
export async function showCodeForm(
  verifier: DeviceVerifier,
  res: ServerResponse,
  session: SessionRecord,
  view: CodeFormView,
): Promise<void> {
  const { language = 'en' } = verifier;
  const record = view.found?.record;
  const fields: FormFields = record === undefined ? [] : [[SHOWN_FIELD, record.userCode]];
  const client = record === undefined ? undefined : await verifier.ctx.clients.get(record.clientId);
  const html = verifier.pages.deviceCode({
    user: { sub: session.sub, name: session.name },
    userCode: record === undefined ? view.typed : formatUserCode(record.userCode),
    clientId: record?.clientId,
    clientName: record === undefined ? undefined : (client?.name ?? record.clientId),
    scopes: record?.scope,
    error: view.message === undefined ? undefined : localizeMessage(language, view.message),
    hidden: [
      ...fields,
      ...languageField(verifier),
      [FORM_TOKEN_FIELD, verifier.tokens.issue('device', sessionBinding(session), fields)],
    ],
    language,
  });
  sendPage(res, view.status ?? 200, html, { language });
}

/** Records the user's decision on a pending code, and shows the page after it. */
export async function recordDecision(
  verifier: DeviceVerifier,
  res: ServerResponse,
  session: SessionRecord,
  { hash, record }: PendingDeviceCode,
  approved: boolean,
): Promise<void> {
  const { ctx, pages, language = 'en' } = verifier;
  await deviceCodes(ctx.store).replace(
    hash,
    approved
      ? {
          ...record,
          status: 'approved',
          sub: session.sub,
          authTime: Math.floor(session.createdAt / 1000),
          // the device's tokens belong to the user's grant to the client, listed and revoked as one
          grantId: await approveGrant(ctx, session.sub, record.clientId, record.scope),
        }
      : { ...record, status: 'denied' },
    // decided once: a decision racing another (or a code gone meanwhile) changes nothing
    { status: 'pending' },
  );
  const client = await ctx.clients.get(record.clientId);
  const clientName = client?.name ?? record.clientId;
  sendPage(res, 200, pages.deviceDone({ approved, clientName, language }), { language });
}
