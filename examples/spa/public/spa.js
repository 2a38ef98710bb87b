// A single-page app of the reference server: the authorization code flow with PKCE (RFC 7636)
// done with fetch alone, then the API with the access token, and the live feeds with the
// `session` cookie the sign-in page set (EventSource and WebSocket cannot send a header).
import { problemText, showLive } from '/live.js';

const CLIENT_ID = 'demo-spa';
const SCOPE = 'openid profile read:messages write:messages offline_access';
const $ = (id) => document.getElementById(id);
const redirectUri = `${location.origin}/callback`;

const base64url = (bytes) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replaceAll('+', '-')
    .replaceAll('/', '_')
    .replace(/=+$/, '');
const randomString = () => base64url(crypto.getRandomValues(new Uint8Array(32)));
const sha256 = (text) => crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));

/** The service's discovery document (RFC 8414): the endpoints, never hard-coded paths. */
async function discover() {
  const { api } = await (await fetch('/config.json')).json();
  const answer = await fetch(new URL('/.well-known/openid-configuration', api));
  if (!answer.ok) throw new Error(`discovery: ${await problemText(answer)}`);
  return answer.json();
}

/** Step 1: to the authorization endpoint, with a fresh verifier, state and nonce. */
async function signIn(server) {
  const flow = { verifier: randomString(), state: randomString(), nonce: randomString() };
  sessionStorage.setItem('flow', JSON.stringify(flow));
  const url = new URL(server.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: CLIENT_ID,
    redirect_uri: redirectUri,
    scope: SCOPE,
    state: flow.state,
    nonce: flow.nonce,
    code_challenge: base64url(await sha256(flow.verifier)),
    code_challenge_method: 'S256',
  });
  location.assign(url);
}

/** A form POST to the token endpoint; RFC 6749 §5.2 errors are thrown with their text. */
async function tokenRequest(server, fields) {
  const answer = await fetch(server.token_endpoint, {
    method: 'POST',
    body: new URLSearchParams({ client_id: CLIENT_ID, ...fields }),
  });
  const body = await answer.json();
  if (!answer.ok) throw new Error(`${body.error}: ${body.error_description ?? ''}`);
  return body;
}

/** Step 2, at /callback: check state and issuer (RFC 9207), trade the code for tokens. */
async function finishSignIn(server) {
  const params = new URLSearchParams(location.search);
  const flow = JSON.parse(sessionStorage.getItem('flow') ?? 'null');
  sessionStorage.removeItem('flow');
  history.replaceState(null, '', '/');
  if (flow === null || params.get('state') !== flow.state) throw new Error('state mismatch');
  if (params.get('iss') !== server.issuer) throw new Error('issuer mismatch');
  if (params.has('error')) throw new Error(`sign-in refused: ${params.get('error')}`);
  const tokens = await tokenRequest(server, {
    grant_type: 'authorization_code',
    code: params.get('code'),
    redirect_uri: redirectUri,
    code_verifier: flow.verifier,
  });
  // Straight from the token endpoint, so its origin vouches for it (OIDC Core §3.1.3.7);
  // the nonce still binds it to this sign-in.
  const payload = tokens.id_token.split('.')[1].replaceAll('-', '+').replaceAll('_', '/');
  if (JSON.parse(atob(payload)).nonce !== flow.nonce) throw new Error('nonce mismatch');
  return tokens;
}

/** Calls the API with the access token; once expired, refreshes it (rotation) and retries. */
async function api(server, tokens, path, init = {}) {
  const call = () =>
    fetch(new URL(path, server.issuer), {
      ...init,
      headers: { ...init.headers, Authorization: `Bearer ${tokens.access_token}` },
    });
  let answer = await call();
  if (answer.status === 401 && tokens.refresh_token) {
    Object.assign(
      tokens,
      await tokenRequest(server, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
      }),
    );
    sessionStorage.setItem('tokens', JSON.stringify(tokens));
    answer = await call();
  }
  return answer;
}

async function showApp(server, tokens) {
  const me = await api(server, tokens, '/api/me');
  if (!me.ok) throw new Error(`/api/me: ${await problemText(me)}`);
  const { sub, name, scopes } = await me.json();
  $('who').textContent = `${name ?? sub} (${sub})`;
  $('scopes').textContent = scopes.join(' ');
  $('app').hidden = false;
  showLive(new URL(server.issuer), 'general');
  $('post-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const text = event.currentTarget.elements.text;
    const answer = await api(server, tokens, '/api/messages', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ text: text.value }),
    });
    $('error').textContent = answer.ok ? '' : await problemText(answer);
    if (answer.ok) text.value = '';
  });
  $('sign-out').addEventListener('click', async () => {
    // revoke the refresh token (RFC 7009), end the server's session, forget the tokens
    await fetch(server.revocation_endpoint, {
      method: 'POST',
      body: new URLSearchParams({ client_id: CLIENT_ID, token: tokens.refresh_token ?? '' }),
    });
    await fetch(new URL('/logout', server.issuer), { method: 'POST', credentials: 'include' });
    sessionStorage.removeItem('tokens');
    location.assign('/');
  });
}

async function main() {
  const server = await discover();
  $('sign-in').addEventListener('click', () => signIn(server).catch(showError));
  let tokens = JSON.parse(sessionStorage.getItem('tokens') ?? 'null');
  if (location.pathname === '/callback') {
    tokens = await finishSignIn(server);
    // Demo only: a tab's storage is readable by any script of this origin.
    sessionStorage.setItem('tokens', JSON.stringify(tokens));
  }
  if (tokens === null) {
    $('signed-out').hidden = false;
    return;
  }
  await showApp(server, tokens);
}

function showError(err) {
  $('error').textContent = String(err.message ?? err);
  $('signed-out').hidden = false;
}

main().catch(showError);
