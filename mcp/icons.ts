import type { Toolset } from './toolsets.js';

/**
 * Icons a host shows beside the server and its tools (MCP `icons`, 2025-11-25 on). One icon a toolset,
 * shared by its tools: a host tells the kinds of tool apart, and a list carries eight icons' worth of
 * text however many tools it holds. Neither icons nor annotations are shown to the model
 * (docs/mcp.md, "Annotations and icons").
 *
 * Two forms of the same SVGs:
 *   - `data:` URIs (DATA_ICONS) where the server has no origin of its own: svc-mcp over stdio, and its
 *     loopback streamable HTTP face. They need no request, and a host that renders them needs no trust
 *     in a second origin.
 *   - URLs on the service's own origin (`servedIcons(base)`: `{base}/mcp/icons/<name>.svg`, served by
 *     cli/hosted-mcp.ts) on the hosted endpoints, which have one: a 2026-era result carries the
 *     server's icons in every `_meta` serverInfo, so a URL (~50 bytes) instead of a data: URI
 *     (~400 bytes) is saved on each result, and in tools/list on every toolset's icon.
 */
export interface Icon {
  src: string;
  mimeType: 'image/svg+xml';
  sizes: string[];
}

/** The name an icon is served under (`/mcp/icons/<name>.svg`): the server's, or a toolset's. */
export type IconName = 'server' | Toolset;

/** A 24×24 line drawing of the given shapes. */
function svg(shapes: string): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="#2563eb" stroke-width="2" stroke-linecap="round">${shapes}</svg>`;
}

/** Each icon's SVG document, as served and as encoded in its data: URI. */
export const ICON_SVGS: Readonly<Record<IconName, string>> = {
  // The server's own: a window with a bolt (sites served fast).
  server: svg('<rect x="3" y="4" width="18" height="16" rx="2"/><path d="M3 9h18M13 11l-3 4h4l-3 4"/>'),
  // A globe: published apps.
  apps: svg('<circle cx="12" cy="12" r="9"/><path d="M3 12h18M12 3a14 14 0 0 1 0 18M12 3a14 14 0 0 0 0 18"/>'),
  // A grid: a Table's records.
  tables: svg('<rect x="3" y="4" width="18" height="16" rx="2"/><path d="M3 10h18M3 15h18M9 4v16"/>'),
  // A cylinder: a data file.
  datasets: svg('<ellipse cx="12" cy="6" rx="8" ry="3"/><path d="M4 6v12a8 3 0 0 0 16 0V6M4 12a8 3 0 0 0 16 0"/>'),
  // A wallet.
  wallet: svg('<rect x="3" y="6" width="18" height="14" rx="2"/><path d="M3 10h18M16 15h2M7 6l9-3v3"/>'),
  // A clock turning back: versions and rollback.
  versions: svg('<path d="M3 12a9 9 0 1 0 3-6.7L3 8M3 3v5h5M12 7v5l3 2"/>'),
  // A person: the signed-in account.
  account: svg('<circle cx="12" cy="8" r="4"/><path d="M4 21c0-4 3.6-7 8-7s8 3 8 7"/>'),
  // Braces: code.
  functions: svg('<path d="M8 3c-2 0-3 1-3 3v3l-2 3 2 3v3c0 2 1 3 3 3M16 3c2 0 3 1 3 3v3l2 3-2 3v3c0 2-1 3-3 3"/>'),
  // A wrench: the low-level steps.
  advanced: svg('<path d="M14.7 6.3a4 4 0 0 0-5.4 5.4L3 18l3 3 6.3-6.3a4 4 0 0 0 5.4-5.4l-2.5 2.5-2.4-.6-.6-2.4z"/>'),
};

/** Where the service serves its icons, after its base URL. */
export const ICONS_PATH = '/mcp/icons/';

/** The icons one face stamps: the server's (serverInfo, and the tools of no toolset) and each toolset's. */
export interface Icons {
  server: Icon[];
  toolsets: Readonly<Record<Toolset, Icon[]>>;
}

function iconsWith(src: (name: IconName) => string): Icons {
  const icon = (name: IconName): Icon[] => [{ src: src(name), mimeType: 'image/svg+xml', sizes: ['any'] }];
  const { server: _server, ...toolsets } = ICON_SVGS;
  return {
    server: icon('server'),
    toolsets: Object.fromEntries(Object.keys(toolsets).map((t) => [t, icon(t as Toolset)])) as Record<Toolset, Icon[]>,
  };
}

/** Base64 data: URIs (the form the spec names): svc-mcp, which has no origin to serve them from. */
export const DATA_ICONS: Icons = iconsWith((name) => `data:image/svg+xml;base64,${Buffer.from(ICON_SVGS[name]).toString('base64')}`);

const served = new Map<string, Icons>();
/** URLs on the service's own origin (`{base}/mcp/icons/<name>.svg`): the hosted endpoints. */
export function servedIcons(baseUrl: string): Icons {
  const base = baseUrl.replace(/\/+$/, '');
  let icons = served.get(base);
  if (!icons) {
    icons = iconsWith((name) => `${base}${ICONS_PATH}${name}.svg`);
    served.set(base, icons);
  }
  return icons;
}

/** The icons of a tool: its toolset's; the server's for the tools that belong to none (list_toolsets, enable_toolset). */
export function iconsOf(toolset: Toolset | null, icons: Icons = DATA_ICONS): Icon[] {
  return toolset ? icons.toolsets[toolset] : icons.server;
}

/**
 * A forwarded tool's icons (svc-mcp in front of a hosted svc, mcp/upstream.ts): the hosted service
 * lists its own served URLs; svc-mcp, which has no origin, lists the same icon as a data: URI.
 */
export function localIconsOf<T extends { src: string }>(remote: T[] | undefined, upstreamUrl: string): (T | Icon)[] | undefined {
  if (!remote) return undefined;
  const prefix = `${new URL(upstreamUrl).origin}/`;
  return remote.map((icon): T | Icon => {
    const m = icon.src.startsWith(prefix) ? /\/mcp\/icons\/([a-z]+)\.svg$/.exec(icon.src) : null;
    const name = m?.[1] as IconName | undefined;
    return name && name in ICON_SVGS ? (name === 'server' ? DATA_ICONS.server[0]! : DATA_ICONS.toolsets[name as Toolset][0]!) : icon;
  });
}
