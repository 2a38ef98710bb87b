// The words of the authorization server's pages, in English and French, and how a request
// picks its language: OpenID Connect's `ui_locales` first, then `Accept-Language`.
import { type LanguageRange, negotiateLanguage } from '../../http/representation/language.js';

/**
 * The languages portico's pages are written in.
 *
 * @example
 * ```ts
 * PAGE_LANGUAGES.includes('fr'); // true
 * ```
 */
export const PAGE_LANGUAGES = ['en', 'fr'] as const;

/** A language of portico's pages: `'en'` or `'fr'`. */
export type PageLanguage = (typeof PAGE_LANGUAGES)[number];

/**
 * The text of the pages in one language. Templates name their values in braces (`{client}`),
 * filled in by `formatMessage`; `text` translates portico's sentences (the messages of
 * the error pages and of failed attempts), keyed by their English wording.
 */
export interface PageMessages {
  signInTitle: string;
  signInButton: string;
  /** A link to sign in at another provider (brokering): `{provider}` is its label. */
  signInWith: string;
  continueTo: string;
  username: string;
  password: string;
  consentTitle: string;
  consentHeading: string;
  signedInAs: string;
  applicationAsks: string;
  noAccess: string;
  /** What each well-known scope lets the application do. */
  scopes: Readonly<Record<string, string>>;
  allow: string;
  deny: string;
  sentBackTo: string;
  /** The mark after the name of a client that registered itself (its name is its own claim). */
  unverified: string;
  /** Why the mark: the name is the client's claim, and where its answer goes. */
  unverifiedNote: string;
  deviceTitle: string;
  deviceIntro: string;
  code: string;
  deviceAsks: string;
  deviceCheck: string;
  deviceConnected: string;
  deviceConnectedText: string;
  deviceRefused: string;
  deviceRefusedText: string;
  theDevice: string;
  logoutTitle: string;
  logoutHeading: string;
  logoutAsked: string;
  signOutButton: string;
  staySignedIn: string;
  signedOutTitle: string;
  signedOutText: string;
  stillSignedInTitle: string;
  stillSignedInText: string;
  /** portico's sentences in this language, keyed by their English wording (English: `{}`). */
  text: Readonly<Record<string, string>>;
}

const en: PageMessages = {
  signInTitle: 'Sign in',
  signInButton: 'Sign in',
  signInWith: 'Sign in with {provider}',
  continueTo: 'to continue to {client}',
  username: 'Username',
  password: 'Password',
  consentTitle: 'Allow {client}?',
  consentHeading: 'Allow {client} to use your account?',
  signedInAs: 'Signed in as {user}.',
  applicationAsks: 'The application asks to:',
  noAccess: 'No access to your data.',
  scopes: {
    openid: 'Confirm who you are',
    profile: 'See your name and picture',
    email: 'See your email address',
    offline_access: 'Stay connected when you are away (refresh tokens)',
  },
  allow: 'Allow',
  deny: 'Deny',
  sentBackTo: 'Either way you will be sent back to {target}.',
  unverified: 'unverified',
  unverifiedNote:
    'This application registered itself: its name is its own claim, not checked by this service. Allow it only if you expected to be sent to {target}.',
  deviceTitle: 'Connect a device',
  deviceIntro:
    'Signed in as {user}. Enter the code your device shows, and allow it only if you started this on that device.',
  code: 'Code',
  deviceAsks: '{client} asks to:',
  deviceCheck: 'Allow only if this is the device you are connecting.',
  deviceConnected: 'Device connected',
  deviceConnectedText:
    '{device} can now use your account. You may close this page and return to your device.',
  deviceRefused: 'Device refused',
  deviceRefusedText: '{device} was not given access. You may close this page.',
  theDevice: 'The device',
  logoutTitle: 'Sign out',
  logoutHeading: 'Sign out of this service?',
  logoutAsked: '{client} asks you to sign out.',
  signOutButton: 'Sign out',
  staySignedIn: 'Stay signed in',
  signedOutTitle: 'Signed out',
  signedOutText: 'You are signed out. You may close this page.',
  stillSignedInTitle: 'Still signed in',
  stillSignedInText: 'You are still signed in. You may close this page.',
  text: {},
};

const fr: PageMessages = {
  signInTitle: 'Connexion',
  signInButton: 'Se connecter',
  signInWith: 'Se connecter avec {provider}',
  continueTo: 'pour continuer vers {client}',
  username: 'Nom d’utilisateur',
  password: 'Mot de passe',
  consentTitle: 'Autoriser {client}\u00a0?',
  consentHeading: 'Autoriser {client} à utiliser votre compte\u00a0?',
  signedInAs: 'Session ouverte en tant que {user}.',
  applicationAsks: 'L’application demande à\u00a0:',
  noAccess: 'Aucun accès à vos données.',
  scopes: {
    openid: 'Confirmer votre identité',
    profile: 'Voir votre nom et votre photo',
    email: 'Voir votre adresse e-mail',
    offline_access: 'Rester connectée en votre absence (jetons de rafraîchissement)',
  },
  allow: 'Autoriser',
  deny: 'Refuser',
  sentBackTo: 'Dans les deux cas, vous reviendrez sur {target}.',
  unverified: 'non vérifiée',
  unverifiedNote:
    'Cette application s’est inscrite elle-même : son nom n’est que ce qu’elle affirme, ce service ne l’a pas vérifié. Ne l’autorisez que si vous vous attendiez à être renvoyé vers {target}.',
  deviceTitle: 'Connecter un appareil',
  deviceIntro:
    'Session ouverte en tant que {user}. Saisissez le code affiché par votre appareil, et ne l’autorisez que si c’est vous qui avez lancé la connexion sur cet appareil.',
  code: 'Code',
  deviceAsks: '{client} demande à\u00a0:',
  deviceCheck: 'N’autorisez que si c’est bien l’appareil que vous connectez.',
  deviceConnected: 'Appareil connecté',
  deviceConnectedText:
    '{device} peut maintenant utiliser votre compte. Vous pouvez fermer cette page et revenir à votre appareil.',
  deviceRefused: 'Appareil refusé',
  deviceRefusedText: '{device} n’a pas reçu l’accès. Vous pouvez fermer cette page.',
  theDevice: 'L’appareil',
  logoutTitle: 'Déconnexion',
  logoutHeading: 'Fermer votre session sur ce service\u00a0?',
  logoutAsked: '{client} vous demande de vous déconnecter.',
  signOutButton: 'Se déconnecter',
  staySignedIn: 'Garder ma session',
  signedOutTitle: 'Session fermée',
  signedOutText: 'Votre session est fermée. Vous pouvez fermer cette page.',
  stillSignedInTitle: 'Session toujours ouverte',
  stillSignedInText: 'Votre session reste ouverte. Vous pouvez fermer cette page.',
  text: {
    'The sign-out request names an ID token this server did not issue.':
      'La demande de déconnexion cite un jeton d’identité que ce service n’a pas émis.',
    'The ID token was not issued to this application.':
      'Le jeton d’identité n’a pas été émis pour cette application.',
    'The sign-out request must say which application it comes from.':
      'La demande de déconnexion doit indiquer de quelle application elle vient.',
    'The address to return to is not registered for this application.':
      'L’adresse de retour n’est pas enregistrée pour cette application.',
    'A parameter of the sign-out request is repeated.':
      'Un paramètre de la demande de déconnexion est répété.',
    'Choose Sign out or Stay signed in.': 'Choisissez Se déconnecter ou Garder ma session.',
    'This request cannot be completed': 'Cette demande ne peut pas aboutir',
    'Something went wrong': 'Un problème est survenu',
    'Too many attempts': 'Trop de tentatives',
    'Try again later': 'Réessayez plus tard',
    'This form has expired or was changed. Go back to the application and start again.':
      'Ce formulaire a expiré ou a été modifié. Retournez à l’application et recommencez.',
    'This form has expired or was changed. Open the page again.':
      'Ce formulaire a expiré ou a été modifié. Rouvrez la page.',
    'The form sent is not one of these pages.': 'Le formulaire envoyé ne vient pas de ces pages.',
    'The form is not one of ours.': 'Ce formulaire ne vient pas de nous.',
    'Your session has ended. Sign in again.': 'Votre session a pris fin. Reconnectez-vous.',
    'The decision must be approve or deny.': 'Choisissez Autoriser ou Refuser.',
    'Choose Allow or Deny.': 'Choisissez Autoriser ou Refuser.',
    'The request does not say which application it comes from (client_id).':
      'La demande n’indique pas de quelle application elle vient (client_id).',
    'The request names its application more than once.':
      'La demande nomme son application plus d’une fois.',
    'The application that sent you here is not known.':
      'L’application qui vous a envoyé ici est inconnue.',
    'The request gives more than one redirect URI.':
      'La demande donne plus d’une URI de redirection.',
    'The redirect URI is not registered for this application.':
      'L’URI de redirection n’est pas enregistrée pour cette application.',
    'This application has no redirect URI to come back to.':
      'Cette application n’a aucune URI de redirection où revenir.',
    'The request must say which redirect URI to come back to (redirect_uri).':
      'La demande doit indiquer l’URI de redirection où revenir (redirect_uri).',
    'This request must be started again from the application.':
      'Cette demande doit être recommencée depuis l’application.',
    'A pushed request needs one request_uri and the client_id that pushed it.':
      'Une demande poussée doit avoir un seul request_uri et le client_id qui l’a poussée.',
    'This request has expired or was used already. Go back to the application.':
      'Cette demande a expiré ou a déjà servi. Retournez à l’application.',
    'This request was pushed by another application.':
      'Cette demande a été poussée par une autre application.',
    'Enter your username and password.': 'Saisissez votre nom d’utilisateur et votre mot de passe.',
    'The username or password is wrong.': 'Le nom d’utilisateur ou le mot de passe est incorrect.',
    'Too many failed sign-ins from your network. Try again in a minute.':
      'Trop de connexions échouées depuis votre réseau. Réessayez dans une minute.',
    'Too many failed sign-ins from your network. Try again in {minutes} minutes.':
      'Trop de connexions échouées depuis votre réseau. Réessayez dans {minutes} minutes.',
    'Sign-in is unavailable for a moment.': 'La connexion est momentanément indisponible.',
    'That code is not valid or has expired. Check the code your device shows.':
      'Ce code n’est pas valide ou a expiré. Vérifiez le code affiché par votre appareil.',
    'Too many codes tried. Wait {minutes} minute(s) and try again.':
      'Trop de codes essayés. Attendez {minutes} minute(s) et réessayez.',
  },
};

const TABLES: Readonly<Record<PageLanguage, PageMessages>> = Object.freeze({ en, fr });

/**
 * The text of portico's pages in `language` (English for a language it does not have).
 *
 * @example
 * ```ts
 * // a custom sign-in page, in the language portico chose
 * const signIn = (data: SignInPageData) => `<h1>${pageMessages(data.language).signInTitle}</h1>…`;
 * ```
 */
export function pageMessages(language: string | undefined): PageMessages {
  return language === 'fr' ? TABLES.fr : TABLES.en;
}

/**
 * A template with its `{name}` values filled in; `escapeText` is applied to the template's own
 * text (not to the values: give them ready, escaped when the result is HTML).
 *
 * @example
 * ```ts
 * formatMessage('Allow {client}?', { client: 'Photos' }); // 'Allow Photos?'
 * ```
 */
export function formatMessage(
  template: string,
  values: Readonly<Record<string, string>> = {},
  escapeText: (text: string) => string = (text) => text,
): string {
  let out = '';
  let at = 0;
  for (const match of template.matchAll(/\{(\w+)\}/g)) {
    const value = values[match[1]!];
    if (value === undefined) continue;
    out += escapeText(template.slice(at, match.index)) + value;
    at = match.index + match[0].length;
  }
  return out + escapeText(template.slice(at));
}

/**
 * One of portico's sentences in `language`, its values filled in: the English `sentence` is
 * the key of {@link PageMessages.text}; a sentence without a translation stays as it is.
 *
 * @example
 * ```ts
 * localizeMessage('fr', 'The username or password is wrong.');
 * // 'Le nom d’utilisateur ou le mot de passe est incorrect.'
 * ```
 */
export function localizeMessage(
  language: string | undefined,
  sentence: string,
  values?: Readonly<Record<string, string>>,
): string {
  return formatMessage(pageMessages(language).text[sentence] ?? sentence, values);
}

/** Most `ui_locales` tags looked at, and longest value read. */
const MAX_UI_LOCALES = 16;
const MAX_UI_LOCALES_LENGTH = 512;

/**
 * The language of a page: the first of OpenID Connect's `ui_locales` (space-separated BCP 47
 * tags, in order of preference) that portico has, else `Accept-Language`'s choice, else
 * English. `fromUiLocales` says whether `ui_locales` chose it.
 *
 * @example
 * ```ts
 * choosePageLanguage('fr-CA,fr;q=0.9,en;q=0.5', 'de'); // { language: 'fr', fromUiLocales: false }
 * ```
 * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#AuthRequest | OpenID Connect Core §3.1.2.1}
 */
export function choosePageLanguage(
  acceptLanguage: string | readonly string[] | undefined,
  uiLocales: string | null | undefined,
): { language: PageLanguage; fromUiLocales: boolean } {
  const negotiated = negotiateLanguage(acceptLanguage, PAGE_LANGUAGES, 'en') as PageLanguage;
  if (typeof uiLocales !== 'string' || uiLocales.length > MAX_UI_LOCALES_LENGTH) {
    return { language: negotiated, fromUiLocales: false };
  }
  const ranges: LanguageRange[] = uiLocales
    .split(/[ \t]+/)
    .filter((tag) => tag !== '' && tag !== '*')
    .slice(0, MAX_UI_LOCALES)
    .map((tag) => ({ range: tag.toLowerCase(), q: 1 }));
  const chosen = negotiateLanguage(ranges, PAGE_LANGUAGES, '') as PageLanguage | '';
  return chosen === ''
    ? { language: negotiated, fromUiLocales: false }
    : { language: chosen, fromUiLocales: true };
}
