/**
 * Whether a process with this id exists: signal 0 checks without sending anything. EPERM means it
 * exists under another user. (A zombie still counts as alive: callers that must tell read /proc.)
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
