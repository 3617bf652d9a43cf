import fs from 'node:fs';
import path from 'node:path';

/**
 * `<data dir>/admin.json` (mode 0600): how the CLI reaches the running service. Whoever can read it
 * can already read the database files in the same folder, so it grants nothing new.
 */
export interface AdminFile {
  url: string;
  token: string;
  pid: number;
}

export function adminFilePath(dataDir: string): string {
  return path.join(dataDir, 'admin.json');
}

export function writeAdminFile(dataDir: string, content: AdminFile): void {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = adminFilePath(dataDir);
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(content), { mode: 0o600 });
  fs.renameSync(tmp, file);
}

export function readAdminFile(dataDir: string): AdminFile | null {
  try {
    return JSON.parse(fs.readFileSync(adminFilePath(dataDir), 'utf8')) as AdminFile;
  } catch {
    return null;
  }
}

export function removeAdminFile(dataDir: string, token: string): void {
  const current = readAdminFile(dataDir);
  if (current?.token === token) fs.rmSync(adminFilePath(dataDir), { force: true });
}
