import { describe, expect, it } from 'vitest';
import { PersonAsker, usedStatesInMemory } from '../../mcp/ask-person.js';

// The sealed state's expiry and its binding to the caller, on a clock of the test's own (the HTTP
// round trip itself is test/mcp/eras.test.ts).
const question = { message: 'Delete app "shop"?', requestedSchema: { type: 'object' as const, properties: {} } };
const call = { tool: 'account_delete_app', args: { appId: 'shop' }, caller: 'svc_pat_one' };

/** A request's context as the SDK hands it to a tool: its envelope, and on the retry the state and the answer. */
const contextOf = (state?: string) =>
  ({
    mcpReq: {
      envelope: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } },
      requestState: () => state,
      inputResponses: state ? { answer: { action: 'accept', content: {} } } : undefined,
    },
  }) as never;

async function firstState(asker: PersonAsker): Promise<string> {
  const asked = await asker.ask(contextOf(), call, question);
  if (asked.kind !== 'ask') throw new Error(`expected a question, got ${asked.kind}`);
  return asked.result.requestState as string;
}

describe('PersonAsker', () => {
  it('accepts its own state within ten minutes, refuses it after', async () => {
    let now = 1_000_000;
    const asker = new PersonAsker({ key: 'k', used: usedStatesInMemory(() => now), now: () => now });
    const fresh = await firstState(asker);
    now += 599_000;
    expect(await asker.ask(contextOf(fresh), call, question)).toMatchObject({ kind: 'accepted' });
    const late = await firstState(asker);
    now += 600_001;
    expect(await asker.ask(contextOf(late), call, question)).toEqual({ kind: 'refused', why: 'the confirmation expired' });
  });

  it('refuses a state made for another caller, or by another key', async () => {
    const asker = new PersonAsker({ key: 'k', used: usedStatesInMemory() });
    const state = await firstState(asker);
    expect(await asker.ask(contextOf(state), { ...call, caller: 'svc_pat_two' }, question)).toMatchObject({
      kind: 'refused',
      why: 'the confirmation was given for another call',
    });
    const otherService = new PersonAsker({ key: 'another key', used: usedStatesInMemory() });
    expect(await otherService.ask(contextOf(state), call, question)).toMatchObject({
      kind: 'refused',
      why: 'the confirmation state was not made by this service',
    });
  });

  it('a client without the elicitation capability is not asked', async () => {
    const asker = new PersonAsker({ key: 'k', used: usedStatesInMemory() });
    const ctx = { mcpReq: { envelope: { 'io.modelcontextprotocol/clientCapabilities': {} }, requestState: () => undefined } } as never;
    expect(await asker.ask(ctx, call, question)).toEqual({ kind: 'cannot-ask' });
  });
});
