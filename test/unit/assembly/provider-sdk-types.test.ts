import { mkdirSync, writeFileSync } from 'node:fs';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { runAssembly } from '../../../src/domain/assembly/index.js';
import { type ProviderFormat, providerFixtures, storedMessages } from '../../helpers/provider-fixtures.js';
import { generateSession, makeInput } from './helpers.js';
import { mediaSession } from './media-fixture.js';

/** The official SDK type each format's payload must be (object literals: no unknown key, no missing one). */
const TYPES: Record<ProviderFormat, string> = {
  OPENAI_CHAT: '{ messages: ChatCompletionMessageParam[] }',
  OPENAI_RESPONSES: '{ input: ResponseInputItem[] }',
  // The beta type: the superset that beta blocks (the MCP connector's mcp_tool_use) need.
  // `system` is one text block when it carries a cache breakpoint.
  ANTHROPIC_MESSAGES: '{ system?: string | BetaTextBlockParam[]; messages: BetaMessageParam[] }',
  // Gemini's enums are TypeScript enums, which a JSON string never is: their values, as strings.
  GEMINI: '{ systemInstruction?: Wire<Content>; contents: Wire<Content>[] }',
};

const OUT = new URL('../../output/sdk-types/', import.meta.url).pathname;

describe("every recorded payload, assembled in every format, and every image and PDF a format sends, is what the official SDKs' types accept", () => {
  it('type-checks (openai, @anthropic-ai/sdk, @google/genai)', () => {
    const lines = [
      "import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';",
      "import type { ResponseInputItem } from 'openai/resources/responses/responses';",
      "import type { BetaMessageParam, BetaTextBlockParam } from '@anthropic-ai/sdk/resources/beta/messages';",
      "import type { Content } from '@google/genai';",
      // An enum's values as string literals: `${T}` of a string enum is the union of its values.
      `type Wire<T> = T extends string ? \`\${T}\` : T extends (infer U)[] ? Wire<U>[] : T extends object ? { [K in keyof T]: Wire<T[K]> } : T;`,
    ];
    let n = 0;
    for (const fixture of providerFixtures()) {
      for (const format of Object.keys(TYPES) as ProviderFormat[]) {
        const { messages, attachments } = storedMessages(fixture);
        const { payload } = runAssembly(makeInput(messages, { format, keepToolCallRounds: 1_000_000 }, { attachments }));
        lines.push(`// ${fixture.file} as ${format}`, `export const p${n++}: ${TYPES[format]} = ${JSON.stringify(payload)};`);
      }
    }
    // An image and a PDF by bytes, URL and the format's own provider file, in a user message and a tool result.
    for (const format of Object.keys(TYPES) as ProviderFormat[]) {
      const { messages, attachments } = mediaSession(format);
      const { payload } = runAssembly(makeInput(messages, { format }, { attachments }));
      lines.push(`// images and PDFs as ${format}`, `export const p${n++}: ${TYPES[format]} = ${JSON.stringify(payload)};`);
    }
    // cache_control breakpoints: the system block, the stable prefix and the newest message, on text, tool_use and tool_result blocks.
    for (const maxTokens of [null, 8_000]) {
      const { payload } = runAssembly(
        makeInput(generateSession(300, 3), { format: 'ANTHROPIC_MESSAGES', system: 'Answer precisely. '.repeat(400), maxTokens }),
      );
      const marks = JSON.stringify(payload).match(/"cache_control"/g)?.length ?? 0;
      expect(marks).toBe(3);
      lines.push(
        `// cache breakpoints (maxTokens ${maxTokens})`,
        `export const p${n++}: ${TYPES.ANTHROPIC_MESSAGES} = ${JSON.stringify(payload)};`,
      );
    }
    mkdirSync(OUT, { recursive: true });
    const file = `${OUT}payloads.ts`;
    writeFileSync(file, `${lines.join('\n')}\n`);
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
    });
    const problems = ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
      const label = where >= 0 ? lines[where - 1] : '';
      return `${label}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n').slice(0, 600)}`;
    });
    expect(problems).toEqual([]);
  }, 120_000);
});
