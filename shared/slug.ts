/** `My Table!` → `my-table` (at most 50 characters); `empty` when nothing of the name is left. */
export function slugFromName(name: string, empty: string): string {
  const s = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 50)
    .replace(/-+$/, '');
  return s || empty;
}
