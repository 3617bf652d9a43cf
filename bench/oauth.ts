import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { BrowserClient, formFields, signUp } from '../test/oauth/browser-client.js';
import { benchServiceEnv, load, printTable, spawnService, waitForHttp, type LoadResult } from './lib.js';

/**
 * OAuth on the Account API. Reference: the same GET /api/v1/sites with a personal key (the credential
 * path the foundation already had). Also: sequential refresh-token rotations (each spends the previous
 * token, so they cannot run in parallel for one grant) and dashboard sign-in (one scrypt verification).
 */
export async function run(): Promise<void> {
  const { dir, base, env } = await benchServiceEnv('oauth');
  const svc = spawnService(env);
  try {
    await waitForHttp(`${base}/healthz`);
    const browser = new BrowserClient(base);
    const t0 = performance.now();
    const signed = await signUp(browser, 'bench@example.com', 'bench password 123');
    const signUpMs = performance.now() - t0;
    if (signed.status !== 303) throw new Error(`sign-up failed: ${signed.status}`);

    const keysPage = await (await browser.get('/dashboard/keys')).text();
    const made = await (
      await browser.post('/dashboard/keys', { csrf: formFields(keysPage, '/dashboard/keys').csrf, name: 'bench', scopes: 'svc.sites.read' })
    ).text();
    const key = /id="new-key-secret">(svc_pat_[\w-]+)</.exec(made)![1];

    const redirect = 'http://127.0.0.1:9/cb';
    const { client_id } = await (
      await fetch(`${base}/api/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'bench', redirect_uris: [redirect] }),
      })
    ).json();
    const verifier = randomBytes(32).toString('base64url');
    const q = new URLSearchParams({
      response_type: 'code',
      client_id,
      redirect_uri: redirect,
      scope: 'svc.sites.read',
      resource: `${base}/api/v1`,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state: 's',
    });
    const consent = await (await browser.get(`/oauth/authorize?${q}`)).text();
    const back = await browser.post('/oauth/authorize', { ...formFields(consent, '/oauth/authorize'), decision: 'approve' });
    const code = new URL(back.headers.get('location')!).searchParams.get('code')!;
    const token = async (form: Record<string, string>) =>
      (
        await fetch(`${base}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(form),
        })
      ).json();
    let tokens = await token({ grant_type: 'authorization_code', client_id, code, redirect_uri: redirect, code_verifier: verifier });

    const rows: LoadResult[] = [];
    await load('warmup', `${base}/api/v1/sites`, { seconds: 2, headers: { authorization: `Bearer ${key}` } });
    rows.push(await load('personal key  GET /api/v1/sites', `${base}/api/v1/sites`, { headers: { authorization: `Bearer ${key}` } }));
    // Access tokens live 15 minutes: far longer than the 8 s run.
    rows.push(await load('OAuth token   GET /api/v1/sites', `${base}/api/v1/sites`, { headers: { authorization: `Bearer ${tokens.access_token}` } }));
    printTable('Account API auth (32 connections, 8 s each, loopback, rate limit off)', rows, 'personal key  GET /api/v1/sites');

    const N = 200;
    const times: number[] = [];
    for (let i = 0; i < N; i++) {
      const s = performance.now();
      tokens = await token({ grant_type: 'refresh_token', client_id, refresh_token: tokens.refresh_token });
      times.push(performance.now() - s);
      if (!tokens.refresh_token) throw new Error(`refresh ${i} failed: ${JSON.stringify(tokens)}`);
    }
    times.sort((a, b) => a - b);
    const total = times.reduce((a, b) => a + b, 0);
    console.log(
      `\nRefresh rotation, ${N} sequential refreshes of one grant: ${(N / (total / 1000)).toFixed(0)}/s, p50 ${times[N >> 1]!.toFixed(1)} ms, p99 ${times[Math.floor(N * 0.99)]!.toFixed(1)} ms`,
    );

    const signInTimes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const b = new BrowserClient(base);
      const page = await (await b.get('/dashboard/signin')).text();
      const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
      const s = performance.now();
      const res = await b.post('/dashboard/signin', { csrf, next: '/dashboard', email: 'bench@example.com', password: 'bench password 123' });
      signInTimes.push(performance.now() - s);
      if (res.status !== 303) throw new Error(`sign-in failed: ${res.status}`);
    }
    console.log(
      `Dashboard sign-up ${signUpMs.toFixed(0)} ms; sign-in median ${signInTimes.sort((a, b) => a - b)[2]!.toFixed(0)} ms (scrypt N=2^15, r=8: 32 MiB per verification, by design)`,
    );
  } finally {
    svc.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
