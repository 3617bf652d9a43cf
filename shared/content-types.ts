const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  htm: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  mjs: 'text/javascript; charset=utf-8',
  json: 'application/json; charset=utf-8',
  map: 'application/json; charset=utf-8',
  webmanifest: 'application/manifest+json; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
  md: 'text/markdown; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  xml: 'application/xml; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  avif: 'image/avif',
  ico: 'image/x-icon',
  pdf: 'application/pdf',
  woff: 'font/woff',
  woff2: 'font/woff2',
  ttf: 'font/ttf',
  otf: 'font/otf',
  mp4: 'video/mp4',
  webm: 'video/webm',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  wasm: 'application/wasm',
  zip: 'application/zip',
};

export function contentTypeForPath(path: string): string {
  const ext = path.slice(path.lastIndexOf('.') + 1).toLowerCase();
  return TYPES[ext] ?? 'application/octet-stream';
}

/** The media type of a Content-Type value, without its parameters, lower-case: `Text/HTML; charset=x` → `text/html`. */
export function mediaTypeOf(contentType: string): string {
  const semicolon = contentType.indexOf(';');
  return (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
}

/** Magic numbers of the binary types most often uploaded; text types must be UTF-8 without NUL bytes. */
const SIGNATURES: [RegExp, (b: Buffer) => boolean][] = [
  [/^image\/png$/, (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))],
  [/^image\/jpeg$/, (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff],
  [/^image\/gif$/, (b) => b.subarray(0, 4).toString('latin1') === 'GIF8'],
  [/^image\/webp$/, (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP'],
  [/^application\/pdf$/, (b) => b.subarray(0, 5).toString('latin1') === '%PDF-'],
  [/^(text\/|application\/(javascript|json|xml)|image\/svg\+xml)/, (b) => !b.includes(0) && Buffer.from(b.toString('utf8'), 'utf8').equals(b)],
];

/**
 * Whether bytes can be what their media type says (magic numbers for images and PDF, UTF-8 for text;
 * other types pass). The service checks the files uploaded by URL with it; deploy_site checks every
 * file it would send, before it pays or sends anything.
 */
export function contentMatchesType(type: string, bytes: Buffer): boolean {
  const base = mediaTypeOf(type);
  const check = SIGNATURES.find(([re]) => re.test(base));
  return check ? check[1](bytes) : true;
}

/** Text content that `GET /sites/:id/content` returns and agents may edit. */
export function isTextContentType(contentType: string): boolean {
  const t = mediaTypeOf(contentType);
  return (
    t.startsWith('text/') ||
    t === 'application/json' ||
    t === 'application/manifest+json' ||
    t === 'application/xml' ||
    t === 'image/svg+xml' ||
    t === 'application/javascript'
  );
}

/** A caller-supplied media type: `type/subtype` with optional parameters, nothing that breaks a header. */
export function isValidContentType(value: string): boolean {
  return /^[\w.+-]+\/[\w.+-]+(\s*;\s*[\w.+-]+=("[^"\r\n]*"|[\w.+-]+))*$/.test(value) && value.length <= 200;
}
