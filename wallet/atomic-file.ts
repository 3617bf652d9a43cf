import { randomBytes } from 'node:crypto';
import fs from 'node:fs';

/**
 * Replaces `file` with `text` whole: written to a temporary file beside it (mode 0600), flushed to
 * disk, then renamed over it, so a reader (another process) sees the old file or the new one, never
 * half of one, and a crash leaves one of them. The spend ledger and svc-mcp's Table write keys.
 */
export function writeFileAtomically(file: string, text: string): void {
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}
