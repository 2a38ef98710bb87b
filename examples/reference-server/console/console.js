// The reference server's page at `/`: signed in with the `session` cookie (POST /login),
// it posts messages over REST and shows them arriving over /events and /ws.
import { problemText, showLive } from '/live.js';

const $ = (id) => document.getElementById(id);
const postJson = (path, body) =>
  fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });

async function start() {
  const me = await fetch('/api/me');
  if (me.status === 401) {
    $('sign-in').hidden = false;
    return;
  }
  if (!me.ok) throw new Error(await problemText(me));
  const { sub, name } = await me.json();
  $('who').textContent = `${name ?? sub} (${sub})`;
  $('console').hidden = false;
  showLive(new URL(location.origin), $('post-form').elements.channel.value);
}

$('sign-in-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.currentTarget.elements;
  const answer = await postJson('/login', {
    username: form.username.value,
    password: form.password.value,
  });
  if (answer.ok) location.reload();
  else $('sign-in-error').textContent = await problemText(answer);
});

$('post-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.currentTarget.elements;
  const answer = await postJson('/api/messages', {
    text: form.text.value,
    channel: form.channel.value,
  });
  $('post-error').textContent = answer.ok ? '' : await problemText(answer);
  if (answer.ok) form.text.value = '';
});

$('sign-out').addEventListener('click', async () => {
  const answer = await fetch('/logout', { method: 'POST' });
  // a session from the upstream provider ends there too (RP-Initiated Logout)
  const link = /<([^>]+)>;\s*rel="urn:portico:rel:end-session"/.exec(
    answer.headers.get('link') ?? '',
  );
  if (link) location.assign(link[1]);
  else location.reload();
});

start().catch((err) => {
  $('sign-in').hidden = false;
  $('sign-in-error').textContent = String(err);
});
