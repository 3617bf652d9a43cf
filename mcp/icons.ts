import type { Toolset } from './toolsets.js';

/**
 * Icons a host shows beside the server and its tools (MCP `icons`, 2025-11-25 on). Small SVGs as
 * `data:` URIs: they need no request (stdio has no origin to serve them from, and a host may fetch
 * nothing else), and a host that renders them needs no trust in a second origin. One icon a toolset,
 * shared by its tools: a host tells the kinds of tool apart, and a list carries eight icons' worth of
 * text however many tools it holds. Neither icons nor annotations are shown to the model
 * (docs/mcp.md, "Annotations and icons").
 */
export interface Icon {
  src: string;
  mimeType: 'image/svg+xml';
  sizes: string[];
}

/** A 24×24 line drawing of the given shapes, as a base64 data: URI (the form the spec names). */
function svgIcon(shapes: string): Icon {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="#2563eb" stroke-width="2" stroke-linecap="round">${shapes}</svg>`;
  return { src: `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`, mimeType: 'image/svg+xml', sizes: ['any'] };
}

/** The server's own: a window with a bolt (sites served fast). */
export const SERVER_ICONS: Icon[] = [svgIcon('<rect x="3" y="4" width="18" height="16" rx="2"/><path d="M3 9h18M13 11l-3 4h4l-3 4"/>')];

export const TOOLSET_ICONS: Record<Toolset, Icon[]> = {
  // A globe: published apps.
  apps: [svgIcon('<circle cx="12" cy="12" r="9"/><path d="M3 12h18M12 3a14 14 0 0 1 0 18M12 3a14 14 0 0 0 0 18"/>')],
  // A grid: a Table's records.
  tables: [svgIcon('<rect x="3" y="4" width="18" height="16" rx="2"/><path d="M3 10h18M3 15h18M9 4v16"/>')],
  // A cylinder: a data file.
  datasets: [svgIcon('<ellipse cx="12" cy="6" rx="8" ry="3"/><path d="M4 6v12a8 3 0 0 0 16 0V6M4 12a8 3 0 0 0 16 0"/>')],
  // A wallet.
  wallet: [svgIcon('<rect x="3" y="6" width="18" height="14" rx="2"/><path d="M3 10h18M16 15h2M7 6l9-3v3"/>')],
  // A clock turning back: versions and rollback.
  versions: [svgIcon('<path d="M3 12a9 9 0 1 0 3-6.7L3 8M3 3v5h5M12 7v5l3 2"/>')],
  // A person: the signed-in account.
  account: [svgIcon('<circle cx="12" cy="8" r="4"/><path d="M4 21c0-4 3.6-7 8-7s8 3 8 7"/>')],
  // Braces: code.
  functions: [svgIcon('<path d="M8 3c-2 0-3 1-3 3v3l-2 3 2 3v3c0 2 1 3 3 3M16 3c2 0 3 1 3 3v3l2 3-2 3v3c0 2-1 3-3 3"/>')],
  // A wrench: the low-level steps.
  advanced: [svgIcon('<path d="M14.7 6.3a4 4 0 0 0-5.4 5.4L3 18l3 3 6.3-6.3a4 4 0 0 0 5.4-5.4l-2.5 2.5-2.4-.6-.6-2.4z"/>')],
};

/** The icons of a tool: its toolset's; the server's for the tools that belong to none (list_toolsets, enable_toolset). */
export function iconsOf(toolset: Toolset | null): Icon[] {
  return toolset ? TOOLSET_ICONS[toolset] : SERVER_ICONS;
}
