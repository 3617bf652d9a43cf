import { describe, expect, it } from 'vitest';
import { DEFAULT_PASSWORD_HASH_COST, hashPassword, verifyPassword } from '../../service/auth/passwords.js';
import { loadConfig } from '../../service/config.js';

describe('password hashes', () => {
  it('default to scrypt N=2^15, r=8 (OWASP minimum), verify the right password only', async () => {
    const stored = await hashPassword('correct horse battery staple');
    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    expect(await verifyPassword('correct horse battery staple', stored)).toBe(true);
    expect(await verifyPassword('correct horse battery stapler', stored)).toBe(false);
    expect(await hashPassword('correct horse battery staple')).not.toBe(stored); // salted
  });

  it('keep verifying after the cost changes: each hash names its own parameters', async () => {
    const cheap = await hashPassword('pw', 10);
    expect(cheap.split('$')[1]).toBe('1024');
    const dear = await hashPassword('pw', 16);
    expect(dear.split('$')[1]).toBe('65536');
    expect(await verifyPassword('pw', cheap)).toBe(true);
    expect(await verifyPassword('pw', dear)).toBe(true);
    expect(await verifyPassword('pw', 'bcrypt$whatever')).toBe(false);
  });

  it('SVC_PASSWORD_HASH_COST defaults to 15 and is refused outside 10..18', () => {
    expect(loadConfig({}).passwordHashCost).toBe(DEFAULT_PASSWORD_HASH_COST);
    expect(loadConfig({ SVC_PASSWORD_HASH_COST: '17' }).passwordHashCost).toBe(17);
    expect(() => loadConfig({ SVC_PASSWORD_HASH_COST: '9' })).toThrow(/SVC_PASSWORD_HASH_COST/);
    expect(() => loadConfig({ SVC_PASSWORD_HASH_COST: '19' })).toThrow(/SVC_PASSWORD_HASH_COST/);
  });
});
