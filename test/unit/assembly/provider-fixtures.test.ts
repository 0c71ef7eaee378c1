import { describe, expect, it } from 'vitest';
import { runAssembly } from '../../../src/domain/assembly/index.js';
import { canonicalJson } from '../../../src/domain/assembly/hash.js';
import { payloadViolations } from '../../helpers/provider-payloads.js';
import { makePdf, makePng } from '../../helpers/images.js';
import {
  expectedItems,
  payloadItems,
  type ProviderFormat,
  providerFixtures,
  storedMessages,
  storedPayload,
} from '../../helpers/provider-fixtures.js';
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

// ---------------------------------------------------------------- images and documents

const PNG64 = makePng(4, 3).toString('base64');
const PDF64 = makePdf(1).toString('base64');
const pngUrl = `data:image/png;base64,${PNG64}`;
const pdfUrl = `data:application/pdf;base64,${PDF64}`;
const ANTHROPIC_FILE = 'file_011CNha8iCJcU1wXNR6q4V8w';
const OPENAI_FILE = 'file-6F2ksmvXxt4VdoqmHRw6kL';
const GOOGLE_FILE = 'https://generativelanguage.googleapis.com/v1beta/files/abc123';

/** A request of each format holding images and PDFs by bytes, URL and file id, in a user message and (where the format has one) a tool result. */
const MEDIA_REQUESTS: Record<ProviderFormat, Record<string, unknown>> = {
  ANTHROPIC_MESSAGES: {
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG64 }, cache_control: { type: 'ephemeral' } },
          {
            type: 'document',
            source: { type: 'base64', media_type: 'application/pdf', data: PDF64 },
            title: 'report.pdf',
            context: 'The third quarter.',
            citations: { enabled: true },
          },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.webp' } },
          { type: 'document', source: { type: 'file', file_id: ANTHROPIC_FILE } },
        ],
      },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_shot', name: 'screenshot', input: {} }] },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_shot',
            content: [
              { type: 'text', text: 'Captured:' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG64 } },
              { type: 'text', text: 'Done.' },
            ],
          },
        ],
      },
    ],
  },
  OPENAI_CHAT: {
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image_url', image_url: { url: pngUrl, detail: 'low' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          { type: 'file', file: { file_data: pdfUrl, filename: 'report.pdf' } },
          { type: 'file', file: { file_id: OPENAI_FILE } },
          { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
        ],
      },
    ],
  },
  OPENAI_RESPONSES: {
    input: [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'What is in these?' },
          { type: 'input_image', image_url: pngUrl, detail: 'high' },
          { type: 'input_image', file_id: OPENAI_FILE, detail: 'auto' },
          { type: 'input_file', file_data: pdfUrl, filename: 'report.pdf' },
          { type: 'input_file', file_url: 'https://example.com/paper.pdf' },
        ],
      },
      { type: 'function_call', call_id: 'call_shot', name: 'screenshot', arguments: '{}' },
      {
        type: 'function_call_output',
        call_id: 'call_shot',
        output: [
          { type: 'input_text', text: 'Captured:' },
          { type: 'input_image', image_url: pngUrl, detail: 'auto' },
        ],
      },
    ],
  },
  GEMINI: {
    contents: [
      {
        role: 'user',
        parts: [
          { text: 'What is in these?' },
          { inlineData: { mimeType: 'image/png', data: PNG64 } },
          { inlineData: { mimeType: 'application/pdf', data: PDF64 } },
          { fileData: { mimeType: 'image/jpeg', fileUri: GOOGLE_FILE } },
          { fileData: { mimeType: 'application/pdf', fileUri: 'https://example.com/paper.pdf' } },
          { inlineData: { mimeType: 'audio/wav', data: 'UklGRg==' } },
        ],
      },
    ],
  },
};

type Source = { data: string } | { url: string } | { fileId: string };

/** What each read attachment must be: name, type and source, in order. */
const READ: Record<ProviderFormat, Array<{ name: string; mimeType: string; source: Source; role?: 'TOOL' }>> = {
  ANTHROPIC_MESSAGES: [
    { name: 'image-1.png', mimeType: 'image/png', source: { data: PNG64 } },
    { name: 'report.pdf', mimeType: 'application/pdf', source: { data: PDF64 } },
    { name: 'image-2.webp', mimeType: 'image/webp', source: { url: 'https://example.com/cat.webp' } },
    { name: 'document-2.pdf', mimeType: 'application/pdf', source: { fileId: ANTHROPIC_FILE } },
    { name: 'image-1.png', mimeType: 'image/png', source: { data: PNG64 }, role: 'TOOL' },
  ],
  OPENAI_CHAT: [
    { name: 'image-1.png', mimeType: 'image/png', source: { data: PNG64 } },
    { name: 'image-2.jpg', mimeType: 'image/jpeg', source: { url: 'https://example.com/cat.jpg' } },
    { name: 'report.pdf', mimeType: 'application/pdf', source: { data: PDF64 } },
    { name: 'document-2.pdf', mimeType: 'application/pdf', source: { fileId: OPENAI_FILE } },
  ],
  OPENAI_RESPONSES: [
    { name: 'image-1.png', mimeType: 'image/png', source: { data: PNG64 } },
    { name: 'image-2.jpg', mimeType: 'image/jpeg', source: { fileId: OPENAI_FILE } },
    { name: 'report.pdf', mimeType: 'application/pdf', source: { data: PDF64 } },
    { name: 'document-2.pdf', mimeType: 'application/pdf', source: { url: 'https://example.com/paper.pdf' } },
    { name: 'image-1.png', mimeType: 'image/png', source: { data: PNG64 }, role: 'TOOL' },
  ],
  GEMINI: [
    { name: 'image-1.png', mimeType: 'image/png', source: { data: PNG64 } },
    { name: 'document-1.pdf', mimeType: 'application/pdf', source: { data: PDF64 } },
    { name: 'image-2.jpg', mimeType: 'image/jpeg', source: { fileId: GOOGLE_FILE } },
    { name: 'document-2.pdf', mimeType: 'application/pdf', source: { url: 'https://example.com/paper.pdf' } },
  ],
};

/** Whether `actual` holds every key of `expected` with an equal value (objects compared the same way). */
function holds(actual: unknown, expected: unknown): boolean {
  if (expected === null || typeof expected !== 'object') return actual === expected;
  if (actual === null || typeof actual !== 'object') return false;
  return Object.entries(expected).every(([k, v]) => holds((actual as Record<string, unknown>)[k], v));
}

/** Every object inside `value`. */
function objectsIn(value: unknown, out: unknown[] = []): unknown[] {
  if (Array.isArray(value)) for (const v of value) objectsIn(v, out);
  else if (value !== null && typeof value === 'object') {
    out.push(value);
    for (const v of Object.values(value)) objectsIn(v, out);
  }
  return out;
}

/** The block `format` sends for an image or PDF held so, as far as the holding decides it. */
function blockFor(format: ProviderFormat, mimeType: string, source: Source): Record<string, unknown> {
  const image = mimeType.startsWith('image/');
  const data = 'data' in source ? source.data : undefined;
  const url = 'url' in source ? source.url : undefined;
  const fileId = 'fileId' in source ? source.fileId : undefined;
  switch (format) {
    case 'OPENAI_CHAT':
      if (image) return { type: 'image_url', image_url: { url: url ?? `data:${mimeType};base64,${data}` } };
      return { type: 'file', file: data ? { file_data: `data:${mimeType};base64,${data}` } : { file_id: fileId } };
    case 'OPENAI_RESPONSES':
      if (image)
        return { type: 'input_image', ...(fileId ? { file_id: fileId } : { image_url: url ?? `data:${mimeType};base64,${data}` }) };
      return {
        type: 'input_file',
        ...(data ? { file_data: `data:${mimeType};base64,${data}` } : url ? { file_url: url } : { file_id: fileId }),
      };
    case 'ANTHROPIC_MESSAGES':
      return {
        type: image ? 'image' : 'document',
        source: data ? { type: 'base64', media_type: mimeType, data } : url ? { type: 'url', url } : { type: 'file', file_id: fileId },
      };
    case 'GEMINI':
      return data ? { inlineData: { mimeType, data } } : { fileData: { mimeType, fileUri: url ?? fileId } };
  }
}

const mediaAssembly = (from: ProviderFormat, format: ProviderFormat) => {
  const { messages, attachments } = storedPayload(from, 'request', MEDIA_REQUESTS[from]);
  return runAssembly(makeInput(messages, { format, keepToolCallRounds: 1_000_000 }, { attachments }));
};

describe('images and documents in provider payloads', () => {
  describe.each(FORMATS)('read from %s', (from) => {
    it('become attachment parts (named by the block, else by kind and count in the message), never provider parts of media', () => {
      const { messages, attachments } = storedPayload(from, 'request', MEDIA_REQUESTS[from]);
      const read = messages.flatMap((m) =>
        m.parts.flatMap((p) =>
          p.type === 'attachment' ? [{ role: m.role, part: p, held: attachments.find((a) => a.id === p.attachmentId)! }] : [],
        ),
      );
      expect(
        read.map(({ role, part, held }) => ({
          name: part.name,
          mimeType: part.mimeType,
          source: held.bytes
            ? { data: Buffer.from(held.bytes).toString('base64') }
            : held.url
              ? { url: held.url }
              : { fileId: held.providerFile?.fileId },
          ...(role === 'TOOL' ? { role } : {}),
        })),
      ).toEqual(READ[from]);
      // A TOOL message's media follow the result they came in.
      for (const m of messages.filter((m) => m.role === 'TOOL')) expect(m.parts[0].type).toBe('toolResult');
      // What is not an image or a PDF (audio) stays its provider's part.
      const providerParts = messages.flatMap((m) => m.parts.filter((p) => p.type === 'providerPart'));
      expect(providerParts.length).toBe(from === 'OPENAI_CHAT' || from === 'GEMINI' ? 1 : 0);
    });

    it('assemble back in their own format as the blocks they were', () => {
      const context = mediaAssembly(from, from);
      expect(context.attachmentProblems).toEqual([]);
      const items = payloadItems(from, context.payload as Record<string, unknown>);
      const expected = expectedItems({ file: 'media', format: from, kind: 'request', body: MEDIA_REQUESTS[from] });
      expect(JSON.parse(canonicalJson(items))).toEqual(JSON.parse(canonicalJson(expected)));
    });

    it.each(FORMATS.filter((f) => f !== from))('assemble in %s as its own blocks, or a placeholder saying why', (format) => {
      const context = mediaAssembly(from, format);
      expect(payloadViolations(format, context.payload)).toEqual([]);
      const objects = objectsIn(context.payload);
      for (const a of READ[from]) {
        const why = context.attachmentProblems.find((p) => p.name === a.name && (a.role === 'TOOL') === (p.messageId !== 'm0'));
        if (why) {
          expect(why.problem, `${a.name} in ${format}`).toBe('NOT_SENDABLE');
          continue;
        }
        const block = blockFor(format, a.mimeType, a.source);
        expect(
          objects.some((o) => holds(o, block)),
          `${format} sends ${a.name} as ${JSON.stringify(block).slice(0, 200)}`,
        ).toBe(true);
      }
      // Refused only: another provider's file, media in a tool message of a format that takes none there, what Chat takes no way of.
      for (const p of context.attachmentProblems) expect(p.detail).toMatch(/uploaded to|TOOL message|PDF by URL|image by file id/);
    });
  });

  it('keeps what the attachment cannot hold for its own provider: Anthropic citations and context, an untitled document, OpenAI detail', () => {
    const anthropic = storedPayload('ANTHROPIC_MESSAGES', 'request', MEDIA_REQUESTS.ANTHROPIC_MESSAGES).messages[0].parts;
    expect(anthropic[2].providerMetadata).toEqual({
      anthropic: { extra: { context: 'The third quarter.', citations: { enabled: true } } },
    });
    expect(anthropic[4].providerMetadata).toEqual({ anthropic: { untitled: true } });
    // cache_control is not kept (breakpoints are the assembler's), as for every other block.
    expect(anthropic[1].providerMetadata).toBeUndefined();
    const chat = storedPayload('OPENAI_CHAT', 'request', MEDIA_REQUESTS.OPENAI_CHAT).messages[0].parts;
    expect(chat[1].providerMetadata).toEqual({ openai: { detail: 'low' } });
    // Both OpenAI formats read `detail`: an image read from Chat goes to Responses with it.
    const responses = mediaAssembly('OPENAI_CHAT', 'OPENAI_RESPONSES');
    expect(objectsIn(responses.payload).some((o) => holds(o, { type: 'input_image', image_url: pngUrl, detail: 'low' }))).toBe(true);
  });

  it('an Anthropic plain-text document is a text attachment, inlined as text in every format', () => {
    const body = {
      messages: [
        {
          role: 'user',
          content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Revenue rose 4%.' }, title: 'notes' }],
        },
      ],
    };
    const { messages, attachments } = storedPayload('ANTHROPIC_MESSAGES', 'request', body);
    expect(messages[0].parts[0]).toMatchObject({ type: 'attachment', name: 'notes', mimeType: 'text/plain' });
    expect(attachments[0].content).toBe('Revenue rose 4%.');
    const context = runAssembly(makeInput(messages, { format: 'GEMINI' }, { attachments }));
    expect(JSON.stringify(context.payload)).toContain('Revenue rose 4%.');
  });

  it('Gemini URL-safe base64 is stored as standard base64 (the same bytes)', () => {
    const urlSafe = makePng(300, 200).toString('base64url');
    expect(urlSafe).toMatch(/[-_]/);
    const body = { contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: urlSafe } }] }] };
    const { attachments } = storedPayload('GEMINI', 'request', body);
    expect(Buffer.from(attachments[0].bytes!).equals(Buffer.from(urlSafe, 'base64url'))).toBe(true);
    expect(attachments[0]).toMatchObject({ width: 300, height: 200 });
  });

  it.each([
    [
      'ANTHROPIC_MESSAGES',
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Hi' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PDF64 } },
            ],
          },
        ],
      },
      'input.messages.messages[0].content[1].source.data: the bytes are a PDF document (application/pdf), not image/png as declared',
    ],
    [
      'ANTHROPIC_MESSAGES',
      {
        messages: [
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'shot', input: {} }] },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 't1',
                content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'not base64!' } }],
              },
            ],
          },
        ],
      },
      'input.messages.messages[1].content[0].content[0].source.data is not base64',
    ],
    [
      'OPENAI_CHAT',
      [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/jpeg;base64,${PNG64}` } }] }],
      'input.messages[0].content[0].image_url.url: the bytes are a PNG image (image/png), not image/jpeg as declared',
    ],
    [
      'OPENAI_RESPONSES',
      [
        { type: 'function_call', call_id: 'c1', name: 'shot', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: [{ type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' }] },
      ],
      'input.messages[1].output[0].image_url: the dimensions of this image/png image cannot be read',
    ],
    [
      'GEMINI',
      [{ role: 'user', parts: [{ inlineData: { mimeType: 'application/pdf', data: 'JVBERi0x*' } }] }],
      'input.messages[0].parts[0].inlineData.data is not base64',
    ],
  ] as const)('%s: a block the attachment checks refuse refuses the whole append, naming its JSON path', (format, body, message) => {
    let error: unknown;
    try {
      storedPayload(format, 'request', body);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'BAD_USER_INPUT' });
    expect((error as Error).message).toContain(message);
  });
});
