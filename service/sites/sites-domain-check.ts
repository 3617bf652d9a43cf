import type { Config } from '../kernel/config.js';

/**
 * Public suffixes of more than one label that this check knows (a small built-in rule, not the
 * Public Suffix List): the common second-level registries (co.uk, com.au, …). Any other name's
 * registrable domain is its last two labels. Hosting suffixes on the list (github.io, netlify.app…)
 * are not here: a sites domain under one of them is a separate site from the dashboard anyway
 * unless the dashboard sits under the same name, which this rule reports too.
 */
const MULTI_LABEL_SUFFIXES = new Set([
  'co.uk',
  'org.uk',
  'ac.uk',
  'gov.uk',
  'me.uk',
  'ltd.uk',
  'plc.uk',
  'net.uk',
  'com.au',
  'net.au',
  'org.au',
  'edu.au',
  'gov.au',
  'co.nz',
  'org.nz',
  'net.nz',
  'co.jp',
  'ne.jp',
  'or.jp',
  'ac.jp',
  'go.jp',
  'co.kr',
  'or.kr',
  'co.in',
  'net.in',
  'org.in',
  'co.za',
  'org.za',
  'com.br',
  'net.br',
  'org.br',
  'com.cn',
  'net.cn',
  'org.cn',
  'com.tw',
  'com.hk',
  'com.sg',
  'com.mx',
  'com.ar',
  'com.tr',
  'co.il',
  'co.id',
  'com.my',
  'com.ph',
  'com.vn',
  'com.ua',
  'com.pl',
]);

/** The registrable domain ("site") of a host name by the rule above; an IP address or a one-label name is its own. */
export function registrableDomain(host: string): string {
  const name = host.toLowerCase().replace(/\.$/, '');
  if (/^[\d.]+$/.test(name) || name.includes(':') || !name.includes('.')) return name;
  const labels = name.split('.');
  const lastTwo = labels.slice(-2).join('.');
  return MULTI_LABEL_SUFFIXES.has(lastTwo) && labels.length > 2 ? labels.slice(-3).join('.') : lastTwo;
}

function isLocalHost(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost') || /^127\./.test(host) || host === '[::1]' || host === '::1';
}

/**
 * The start-up warning when hosted pages share a site (registrable domain) with the dashboard: such
 * pages are "same-site" to the browser, so SameSite cookies do not keep their requests apart. Null
 * for separate sites, and on a loopback development setup (`localhost`), where it is the default.
 */
export function sitesDomainWarning(config: Pick<Config, 'baseUrl' | 'sitesDomain'>): string | null {
  const baseHost = new URL(config.baseUrl).hostname.toLowerCase();
  const sitesHost = config.sitesDomain.toLowerCase();
  if (isLocalHost(baseHost) && isLocalHost(sitesHost)) return null;
  const site = registrableDomain(baseHost);
  if (registrableDomain(sitesHost) !== site) return null;
  return (
    `SVC_SITES_DOMAIN (${sitesHost}) shares the registrable domain ${site} with SVC_BASE_URL (${baseHost}): hosted pages are same-site with the dashboard. ` +
    'The dashboard refuses cookies and forms they plant, but serve sites from a separate registrable domain (e.g. SVC_SITES_DOMAIN=svc-sites.example), ' +
    'as GitHub Pages (github.io) and Netlify (netlify.app) do: docs/public-operation.md'
  );
}
