// flow.mjs drives the gateway's /mcp with the official MCP TypeScript SDK:
// its Client, its StreamableHTTPClientTransport and, for sign-in, its OAuth
// code (discovery, dynamic registration, PKCE, token exchange, refresh),
// with an in-memory OAuthClientProvider whose "browser" is fetch.
//
// It prints one JSON line per step on stdout ({"step": ...}) for
// tests/mcp_typescript_test.go to assert on, and stops at "await_reload"
// until the test writes a line on stdin. Anything unexpected ends it with
// a {"step":"error"} line and exit status 1.
//
// Environment:
//   SDR_MCP_URL        the /mcp endpoint (required)
//   SDR_MCP_KEY        an sdr_live_ key: the bearer run (no OAuth)
//   SDR_EMAIL, SDR_PASSWORD   the member who signs in: the OAuth run
//   SDR_TOOL, SDR_TOOL_ARGS   the extract tool to call and its arguments (JSON)
//   SDR_CREDIT_LIMIT   the credit limit entered on the consent page ("" = none)
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  auth,
  discoverAuthorizationServerMetadata,
  refreshAuthorization,
  UnauthorizedError,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { parse } from 'node-html-parser';

const env = process.env;
const mcpURL = new URL(need('SDR_MCP_URL'));
const origin = mcpURL.origin;
// The redirect URI of a native client: the authorization server only
// sends the browser there, so nothing needs to listen on it.
const redirectURI = 'http://127.0.0.1:33418/callback';

function need(name) {
  if (!env[name]) throw new Error(`${name} is not set`);
  return env[name];
}

function emit(step, fields = {}) {
  process.stdout.write(JSON.stringify({ step, ...fields }) + '\n');
}

// requests is every HTTP request the SDK and the browser made: method,
// path and status, so a step can show what went over the wire.
const requests = [];
const mark = () => requests.length;
const since = (i) => requests.slice(i);

async function loggedFetch(input, init = {}) {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const method = init.method ?? (input instanceof Request ? input.method : 'GET');
  const res = await fetch(input, init);
  requests.push({ by: 'sdk', method, path: url.pathname, status: res.status });
  return res;
}

// Browser is the user agent's part of the authorization code flow: it
// follows no redirect by itself, keeps cookies, and fills forms the way a
// person would (hidden inputs as served, the visible ones typed in).
class Browser {
  cookies = new Map();

  async request(method, url, form) {
    const headers = {};
    if (this.cookies.size) {
      headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    }
    let body;
    if (form) {
      body = new URLSearchParams(form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
      headers.origin = new URL(url).origin; // a same-origin form post
    }
    const res = await fetch(url, { method, headers, body, redirect: 'manual' });
    for (const c of res.headers.getSetCookie()) {
      const pair = c.split(';', 1)[0];
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === '' || /max-age=(0|-)/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const loc = res.headers.get('location');
    const page = {
      method,
      url,
      status: res.status,
      location: loc ? new URL(loc, url).href : null,
      text: await res.text(),
    };
    requests.push({ by: 'browser', method, path: new URL(url).pathname, status: res.status });
    return page;
  }

  // submit posts a form with its served fields, values typed into the
  // named inputs, and the pressed button's name=value.
  async submit(page, form, typed = {}, button) {
    const fields = {};
    for (const i of form.querySelectorAll('input, textarea, select')) {
      const name = i.getAttribute('name');
      const type = (i.getAttribute('type') ?? 'text').toLowerCase();
      if (!name || ['submit', 'button', 'image', 'reset', 'file'].includes(type)) continue;
      if ((type === 'checkbox' || type === 'radio') && !i.hasAttribute('checked')) continue;
      fields[name] = i.tagName === 'TEXTAREA' ? i.text : (i.getAttribute('value') ?? '');
    }
    for (const [k, v] of Object.entries(typed)) {
      if (!(k in fields)) throw new Error(`the form at ${page.url} has no input ${k}`);
      fields[k] = v;
    }
    if (button) fields[button.getAttribute('name')] = button.getAttribute('value') ?? '';
    const action = new URL(form.getAttribute('action') ?? page.url, page.url).href;
    return this.request('POST', action, fields);
  }
}

// postForms is the page's <form method="post"> elements.
function postForms(page) {
  return parse(page.text)
    .querySelectorAll('form')
    .filter((f) => (f.getAttribute('method') ?? 'get').toLowerCase() === 'post');
}

function expectStatus(page, status, what) {
  if (page.status !== status) {
    throw new Error(`${what}: ${page.method} ${page.url} answered ${page.status}, want ${status}\n${page.text.slice(0, 600)}`);
  }
}

// Provider is the SDK's OAuthClientProvider, in memory. Its
// redirectToAuthorization plays the browser: sign-in when asked, then the
// consent page, and keeps the code the authorization server sends back.
class Provider {
  constructor(name, browser) {
    this.name = name;
    this.browser = browser;
    this.mayAuthorize = false; // set by the flow when it expects a new grant
    this.visits = [];
  }
  get redirectUrl() { return redirectURI; }
  get clientMetadata() {
    return {
      client_name: this.name,
      redirect_uris: [redirectURI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() { this._state = randomUUID(); return this._state; }
  clientInformation() { return this._client; }
  saveClientInformation(c) { this._client = c; }
  tokens() { return this._tokens; }
  saveTokens(t) { this._tokens = t; }
  saveCodeVerifier(v) { this._verifier = v; }
  codeVerifier() { return this._verifier; }
  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'client') this._client = undefined;
    if (scope === 'all' || scope === 'tokens') this._tokens = undefined;
    if (scope === 'all' || scope === 'verifier') this._verifier = undefined;
  }

  async redirectToAuthorization(url) {
    if (!this.mayAuthorize) {
      throw new Error(`the SDK asked for a new authorization (${url.pathname}) where the test expects none`);
    }
    this.mayAuthorize = false;
    const b = this.browser;
    const visit = { authorize: url.pathname, params: Object.fromEntries(url.searchParams), signed_in: false };
    let page = await b.request('GET', url.href);
    if (page.status === 303 || page.status === 302) {
      // Not signed in: the dashboard's sign-in, which sends us back.
      const signin = new URL(page.location);
      visit.signin = signin.pathname;
      visit.next = signin.searchParams.get('next');
      page = await b.request('GET', signin.href);
      expectStatus(page, 200, 'sign-in page');
      const forms = postForms(page);
      if (forms.length !== 1) throw new Error(`sign-in page has ${forms.length} post forms, want 1`);
      const form = forms[0];
      const email = form.querySelector('input[type=email]') ?? form.querySelector('input[name=email]');
      const password = form.querySelector('input[type=password]');
      if (!email || !password) throw new Error('sign-in form lacks an email or password input');
      page = await b.submit(page, form, {
        [email.getAttribute('name')]: need('SDR_EMAIL'),
        [password.getAttribute('name')]: need('SDR_PASSWORD'),
      });
      expectStatus(page, 303, 'signing in');
      visit.signed_in = true;
      visit.after_signin = page.location;
      this.dashboard = new URL('.', signin).href; // DASH/
      page = await b.request('GET', page.location);
    }
    expectStatus(page, 200, 'consent page');
    const forms = postForms(page);
    const root = parse(page.text);
    visit.consent = {
      post_forms: forms.length,
      names_client: root.text.includes(this.name),
    };
    if (forms.length !== 1) throw new Error(`consent page has ${forms.length} post forms, want exactly 1`);
    const form = forms[0];
    const buttons = form.querySelectorAll('button[name=decision], input[type=submit][name=decision]');
    visit.consent.action = new URL(form.getAttribute('action') ?? page.url, page.url).pathname;
    visit.consent.decisions = buttons.map((x) => x.getAttribute('value'));
    visit.consent.credit_limit_input = !!form.querySelector('input[name=credit_limit]');
    const allow = buttons.find((x) => x.getAttribute('value') === 'allow');
    if (!allow) throw new Error('consent form has no decision=allow button');
    page = await b.submit(page, form, { credit_limit: env.SDR_CREDIT_LIMIT ?? '' }, allow);
    expectStatus(page, 303, 'consent allow');
    const back = new URL(page.location);
    visit.redirect = back.origin + back.pathname;
    visit.state_ok = back.searchParams.get('state') === this._state;
    visit.iss = back.searchParams.get('iss');
    this.code = back.searchParams.get('code');
    visit.has_code = !!this.code;
    if (!this.code) throw new Error(`no code in the redirect: ${page.location}`);
    this.visits.push(visit);
  }
}

function transport(provider, extra = {}) {
  return new StreamableHTTPClientTransport(mcpURL, { authProvider: provider, fetch: loggedFetch, ...extra });
}

async function connect(tr, onListChanged) {
  const c = new Client({ name: 'sdr-ts-e2e', version: '1.0.0' });
  if (onListChanged) c.setNotificationHandler(ToolListChangedNotificationSchema, onListChanged);
  await c.connect(tr);
  return c;
}

async function toolNames(c) {
  const out = [];
  let cursor;
  do {
    const r = await c.listTools(cursor ? { cursor } : {});
    out.push(...r.tools.map((t) => t.name));
    cursor = r.nextCursor;
  } while (cursor);
  return out;
}

// call calls a tool; the SDK checks structuredContent against the tool's
// outputSchema. Shown: isError, the structured content, and whether the
// one text block is that same JSON.
async function call(c, name, args = {}) {
  const r = await c.callTool({ name, arguments: args });
  let textSame = false;
  try {
    textSame = r.content.length === 1 && JSON.stringify(JSON.parse(r.content[0].text)) === JSON.stringify(r.structuredContent);
  } catch { /* not JSON */ }
  return { tool: name, isError: !!r.isError, structured: r.structuredContent, text_is_structured: textSame };
}

// rawCall posts to /mcp with a bearer token without the SDK, to see the
// HTTP answer itself.
async function rawCall(token, sessionId) {
  const headers = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  // In a session: a tools/call; outside one: an initialize, which a valid
  // token (or none) may always send.
  let msg = { jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'get_balance', arguments: {} } };
  if (sessionId) headers['mcp-session-id'] = sessionId;
  else msg = { jsonrpc: '2.0', id: 99, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
  const res = await fetch(mcpURL, { method: 'POST', headers, body: JSON.stringify(msg) });
  await res.text();
  return { status: res.status, www_authenticate: res.headers.get('www-authenticate') };
}

function waitLine() {
  const rl = createInterface({ input: process.stdin });
  return new Promise((resolve, reject) => {
    rl.once('line', (l) => { resolve(l); rl.close(); }); // close() emits 'close' at once
    rl.once('close', () => reject(new Error('stdin closed while waiting for the reload')));
  });
}

function within(ms, p, what) {
  return Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(`${what}: nothing in ${ms} ms`)), ms))]);
}

// anonymous: connect without credentials, list the tools, list_services.
async function anonymous(provider) {
  const tr = transport(provider);
  const c = await connect(tr);
  emit('anonymous', { tools: await toolNames(c), list_services: await call(c, 'list_services') });
  return { c, tr };
}

async function bearerRun() {
  await (await anonymous(undefined)).c.close();
  const tr = transport(undefined, { requestInit: { headers: { authorization: `Bearer ${env.SDR_MCP_KEY}` } } });
  const c = await connect(tr);
  emit('tools', { tools: await toolNames(c) });
  emit('call', await call(c, need('SDR_TOOL'), JSON.parse(need('SDR_TOOL_ARGS'))));
  await c.close();
}

async function oauthRun() {
  const browser = new Browser();
  const provider = new Provider('sdr-ts-e2e', browser);

  // 1. Anonymous discovery works.
  const anon = await anonymous(provider);

  // 2. A paid tool without sign-in: 401, then the SDK's OAuth flow up to
  // the redirect, the browser's sign-in and consent, and the code.
  provider.mayAuthorize = true;
  let m = mark();
  let refused;
  try {
    await anon.c.callTool({ name: need('SDR_TOOL'), arguments: JSON.parse(need('SDR_TOOL_ARGS')) });
  } catch (e) {
    refused = e;
  }
  if (!(refused instanceof UnauthorizedError)) {
    throw new Error(`a paid tool call without sign-in should end in the SDK's UnauthorizedError, got ${refused ?? 'a result'}`);
  }
  emit('authorize', { requests: since(m), client: provider.clientInformation(), visit: provider.visits[0] });
  m = mark();
  await anon.tr.finishAuth(provider.code);
  const first = provider.tokens();
  emit('token', {
    requests: since(m),
    token_type: first.token_type,
    access_prefix: first.access_token.slice(0, 8),
    refresh_prefix: first.refresh_token?.slice(0, 8),
    expires_in: first.expires_in,
    scope: first.scope,
  });
  await anon.c.close();

  // 3. Reconnect signed in: the tools, one extract call.
  let changed;
  const listChanged = new Promise((resolve) => { changed = resolve; });
  const tr = transport(provider);
  const c = await connect(tr, async () => changed());
  emit('tools', { tools: await toolNames(c) });
  emit('call', await call(c, need('SDR_TOOL'), JSON.parse(need('SDR_TOOL_ARGS'))));

  // 4. The test reloads the gateway with one more service.
  emit('await_reload');
  await waitLine();
  await within(15000, listChanged, 'notifications/tools/list_changed');
  emit('list_changed', { tools: await toolNames(c) });

  // 5. Refresh through the SDK's own path (auth() with a refresh token):
  // new tokens, and the session goes on with them.
  m = mark();
  const before = provider.tokens();
  const result = await auth(provider, { serverUrl: mcpURL, fetchFn: loggedFetch });
  const after = provider.tokens();
  emit('refresh', {
    result,
    requests: since(m),
    new_access: after.access_token !== before.access_token,
    new_refresh: !!after.refresh_token && after.refresh_token !== before.refresh_token,
    balance: await call(c, 'get_balance'),
  });

  // 6. Revoke the grant on the dashboard's keys page: the next call is a 401.
  const keysURL = new URL('keys', provider.dashboard).href;
  let page = await browser.request('GET', keysURL);
  expectStatus(page, 200, 'keys page');
  const revokeForms = postForms(page).filter((f) => /\/grants\/[^/]+\/revoke$/.test(f.getAttribute('action') ?? ''));
  const row = revokeForms.length === 1 ? revokeForms[0].closest('tr') : null;
  const listed = { forms: revokeForms.length, row: row ? row.text.replace(/\s+/g, ' ').trim() : null };
  if (revokeForms.length !== 1) throw new Error(`keys page has ${revokeForms.length} grant revoke forms, want 1\n${page.text.slice(0, 2000)}`);
  page = await browser.submit(page, revokeForms[0], {}, revokeForms[0].querySelector('button[name]') ?? undefined);
  const raw = await rawCall(after.access_token, tr.sessionId);
  m = mark();
  let sdkErr = null;
  try {
    await c.callTool({ name: 'get_balance', arguments: {} });
  } catch (e) {
    sdkErr = String(e);
  }
  emit('revoked', { listed, revoke_status: page.status, raw, sdk_error: sdkErr, requests: since(m) });
  await c.close().catch(() => {});

  // 7. A second grant for the same client (still signed in: consent only)
  // to see rotation: the old refresh token is refused after a refresh.
  provider.invalidateCredentials('tokens');
  provider.mayAuthorize = true;
  m = mark();
  const redirect = await auth(provider, { serverUrl: mcpURL, fetchFn: loggedFetch });
  const got = await auth(provider, { serverUrl: mcpURL, authorizationCode: provider.code, fetchFn: loggedFetch });
  const g1 = provider.tokens();
  const c2 = await connect(transport(provider));
  const works = await call(c2, 'get_balance');
  await c2.close();
  const metadata = await discoverAuthorizationServerMetadata(origin, { fetchFn: loggedFetch });
  const refresh = (refreshToken) => refreshAuthorization(origin, {
    metadata, clientInformation: provider.clientInformation(), refreshToken, resource: mcpURL, fetchFn: loggedFetch,
  });
  const g2 = await refresh(g1.refresh_token);
  let reuse = null;
  try {
    await refresh(g1.refresh_token);
  } catch (e) {
    reuse = { name: e.constructor.name, code: e.errorCode ?? e.code ?? null, message: e.message };
  }
  emit('rotation', {
    results: [redirect, got],
    visit: provider.visits[1],
    balance: works,
    new_access: g2.access_token !== g1.access_token,
    new_refresh: g2.refresh_token !== g1.refresh_token,
    old_refresh_refused: reuse,
    after_reuse: await rawCall(g2.access_token),
    requests: since(m),
  });
}

try {
  if (env.SDR_MCP_KEY) await bearerRun();
  else await oauthRun();
  emit('done');
  process.exit(0);
} catch (e) {
  emit('error', { message: String(e?.message ?? e), stack: e?.stack, requests: requests.slice(-12) });
  process.exit(1);
}
