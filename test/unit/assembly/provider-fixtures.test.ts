import { describe, expect, it } from 'vitest';
import { runAssembly } from '../../../src/domain/assembly/index.js';
import { canonicalJson } from '../../../src/domain/assembly/hash.js';
import { payloadViolations } from '../../helpers/provider-payloads.js';
import { expectedItems, payloadItems, type ProviderFormat, providerFixtures, storedMessages } from '../../helpers/provider-fixtures.js';
import { makeInput } from './helpers.js';

const FORMATS: ProviderFormat[] = ['OPENAI_CHAT', 'OPENAI_RESPONSES', 'ANTHROPIC_MESSAGES', 'GEMINI'];
const fixtures = providerFixtures();

/** Every message kept, no result elided: the whole stored conversation in `format`. */
const assemble = (fixture: (typeof fixtures)[number], format: ProviderFormat) => {
  const { messages, attachments } = storedMessages(fixture);
  return runAssembly(makeInput(messages, { format, keepToolCallRounds: 1_000_000 }, { attachments }));
};

describe('recorded provider payloads', () => {
  it('the corpus holds requests and responses of every format', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(30);
    for (const format of FORMATS) {
      for (const kind of ['request', 'response'] as const) {
        expect(fixtures.filter((f) => f.format === format && f.kind === kind).length, `${format} ${kind}s`).toBeGreaterThanOrEqual(3);
      }
    }
  });

  describe.each(fixtures.map((f) => [f.file, f] as const))('%s', (_, fixture) => {
    it('assembles back in its own format item for item (ids, signatures and encrypted content included)', () => {
      const context = assemble(fixture, fixture.format);
      const items = payloadItems(fixture.format, context.payload as Record<string, unknown>);
      const expected = expectedItems(fixture);
      // A response follows the opening user message (and is followed by its calls' results).
      const sent = fixture.kind === 'response' ? items.slice(1, 1 + expected.length) : items;
      expect(JSON.parse(canonicalJson(sent))).toEqual(JSON.parse(canonicalJson(expected)));
    });

    it.each(FORMATS.filter((f) => f !== fixture.format))(
      'assembles in %s within its provider rules, its reasoning and provider data left out with a reason',
      (format) => {
        const context = assemble(fixture, format);
        expect(payloadViolations(format, context.payload)).toEqual([]);
        const stored = storedMessages(fixture).messages;
        const payloadText = JSON.stringify(context.payload);
        for (const message of stored) {
          for (const part of message.parts) {
            if (part.type !== 'reasoning') continue;
            const secret = [part.providerMetadata?.anthropic, part.providerMetadata?.openai, part.providerMetadata?.google]
              .flatMap((m) => (m && typeof m === 'object' ? Object.values(m as Record<string, unknown>) : []))
              .filter((v): v is string => typeof v === 'string' && v.length > 16);
            for (const value of secret)
              expect(payloadText.includes(value), `${format} carries another provider's reasoning data`).toBe(false);
            const decision = context.decisions.find((d) => d.messageId === message.id);
            if (format === 'OPENAI_CHAT') expect(decision?.reason).toContain('reasoning part is left out');
          }
        }
      },
    );
  });
});
