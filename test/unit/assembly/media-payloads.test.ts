import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  type AnthropicMessagesPayload,
  type AssembleContextOptions,
  type ContextFormat,
  canonicalJson,
  type GeminiPayload,
  type OpenAiChatPayload,
  type OpenAiResponsesPayload,
  runAssembly,
} from '../../../src/domain/assembly/index.js';
import { anthropicImageTokens, documentPageTokens } from '../../../src/domain/assembly/media-tokens.js';
import { countTokens } from '../../../src/domain/tokens.js';
import type { DomainMessage, MessageRole, ResolvedAttachment, StoredPart } from '../../../src/domain/types.js';
import { payloadViolations } from '../../helpers/provider-payloads.js';
import { attachmentPart, call, makeInput, msg, result, text } from './helpers.js';
import { gif, type Holding, hashForm, mediaAttachment, mediaSession, OWN_PROVIDER, PDF, PNG, type Provider } from './media-fixture.js';

const FORMATS: ContextFormat[] = ['GENERIC', 'OPENAI_CHAT', 'OPENAI_RESPONSES', 'ANTHROPIC_MESSAGES', 'GEMINI'];
const PNG64 = PNG.toString('base64');
const PDF64 = PDF.toString('base64');

const run = (messages: DomainMessage[], attachments: ResolvedAttachment[], options: Partial<AssembleContextOptions> = {}) =>
  runAssembly(makeInput(messages, options, { attachments }));

/** A user message holding `parts` after a text. */
const asking = (...parts: StoredPart[]) => msg(0, 'USER', [text('Look.'), ...parts]);

/** A round whose TOOL message holds `parts` after its result, then a user message. */
const toolRound = (...parts: StoredPart[]) => [
  msg(0, 'USER', [text('Take a screenshot.')]),
  msg(1, 'ASSISTANT', [call('c1', 'screenshot', {})]),
  msg(2, 'TOOL', [result('c1', 'Captured.'), ...parts]),
  msg(3, 'USER', [text('What do you see?')]),
];

describe('an image and a PDF in a user message, as bytes', () => {
  const image = mediaAttachment('img', 'image', 'BYTES');
  const pdf = mediaAttachment('doc', 'document', 'BYTES');
  const context = (format: ContextFormat) => run([asking(image.part, pdf.part)], [image.attachment, pdf.attachment], { format });

  it('OPENAI_CHAT: image_url and file parts with data URLs', () => {
    expect((context('OPENAI_CHAT').payload as OpenAiChatPayload).messages[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'Look.' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG64}`, detail: 'auto' } },
        { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF64}`, filename: 'doc.pdf' } },
      ],
    });
  });

  it('OPENAI_RESPONSES: input_image and input_file', () => {
    expect((context('OPENAI_RESPONSES').payload as OpenAiResponsesPayload).input[0]).toEqual({
      type: 'message',
      role: 'user',
      content: [
        { type: 'input_text', text: 'Look.' },
        { type: 'input_image', image_url: `data:image/png;base64,${PNG64}`, detail: 'auto' },
        { type: 'input_file', file_data: `data:application/pdf;base64,${PDF64}`, filename: 'doc.pdf' },
      ],
    });
  });

  it('ANTHROPIC_MESSAGES: image and document blocks with base64 sources', () => {
    expect((context('ANTHROPIC_MESSAGES').payload as AnthropicMessagesPayload).messages[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'Look.' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG64 } },
        // The newest message, past 1,024 tokens: its last block is the cache breakpoint (cache-breakpoints.ts).
        {
          type: 'document',
          title: 'doc.pdf',
          source: { type: 'base64', media_type: 'application/pdf', data: PDF64 },
          cache_control: { type: 'ephemeral' },
        },
      ],
    });
  });

  it('GEMINI: inlineData parts', () => {
    expect((context('GEMINI').payload as GeminiPayload).contents[0]).toEqual({
      role: 'user',
      parts: [
        { text: 'Look.' },
        { inlineData: { mimeType: 'image/png', data: PNG64 } },
        { inlineData: { mimeType: 'application/pdf', data: PDF64 } },
      ],
    });
  });

  it('GENERIC: media parts', () => {
    expect((context('GENERIC').payload as { messages: Array<{ parts: unknown[] }> }).messages[0].parts.slice(1)).toEqual([
      { type: 'media', attachmentId: 'img', name: 'img.png', mimeType: 'image/png', source: { type: 'base64', data: PNG64 } },
      { type: 'media', attachmentId: 'doc', name: 'doc.pdf', mimeType: 'application/pdf', source: { type: 'base64', data: PDF64 } },
    ]);
  });

  it('the assembled message holds media parts with what they count, and no problem is reported', () => {
    for (const format of FORMATS) {
      const r = context(format);
      expect(r.attachmentProblems, format).toEqual([]);
      expect(r.messages[0].parts.map((p) => p.type)).toEqual(['text', 'media', 'media']);
    }
    expect(context('OPENAI_CHAT').messages[0].parts[1]).toMatchObject({ media: 'image', width: 1024, height: 768, tokens: 765 });
    expect(context('GEMINI').messages[0].parts[2]).toMatchObject({ media: 'document', pages: 1, tokens: 258 });
  });
});

describe('by URL and by provider file, in a user message', () => {
  const held = (format: ContextFormat, media: 'image' | 'document', holding: Holding, provider: Provider = OWN_PROVIDER[format]) => {
    const a = mediaAttachment('a', media, holding, { provider });
    const r = run([asking(a.part)], [a.attachment], { format });
    return { r, sent: (r.messages[0].parts[1].type === 'media' ? 'media' : 'placeholder') as string };
  };

  it('OPENAI_CHAT: an image by URL, a PDF by file id; neither the other way', () => {
    const chat = (media: 'image' | 'document', holding: Holding) =>
      (held('OPENAI_CHAT', media, holding).r.payload as OpenAiChatPayload).messages[0].content;
    expect(chat('image', 'URL')).toContainEqual({ type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'auto' } });
    expect(chat('document', 'PROVIDER_FILE')).toContainEqual({ type: 'file', file: { file_id: 'file-6F2ksmvXxt4VdoqmHRw6kL' } });
    expect(held('OPENAI_CHAT', 'image', 'PROVIDER_FILE').sent).toBe('placeholder');
    expect(held('OPENAI_CHAT', 'document', 'URL').sent).toBe('placeholder');
  });

  it('OPENAI_RESPONSES: image_url or file_id; file_url or file_id', () => {
    const items = (media: 'image' | 'document', holding: Holding) =>
      ((held('OPENAI_RESPONSES', media, holding).r.payload as OpenAiResponsesPayload).input[0] as { content: unknown[] }).content[1];
    expect(items('image', 'URL')).toEqual({ type: 'input_image', image_url: 'https://example.com/a.png', detail: 'auto' });
    expect(items('image', 'PROVIDER_FILE')).toEqual({ type: 'input_image', file_id: 'file-6F2ksmvXxt4VdoqmHRw6kL', detail: 'auto' });
    expect(items('document', 'URL')).toEqual({ type: 'input_file', file_url: 'https://example.com/a.pdf' });
    expect(items('document', 'PROVIDER_FILE')).toEqual({ type: 'input_file', file_id: 'file-6F2ksmvXxt4VdoqmHRw6kL' });
  });

  it('ANTHROPIC_MESSAGES: url and file sources; a file source says the request needs the Files API beta header', () => {
    const block = (media: 'image' | 'document', holding: Holding) =>
      ((held('ANTHROPIC_MESSAGES', media, holding).r.payload as AnthropicMessagesPayload).messages[0].content as unknown[])[1];
    // The newest message, past 1,024 tokens: its last block is the cache breakpoint (cache-breakpoints.ts).
    const cache_control = { type: 'ephemeral' };
    expect(block('image', 'URL')).toEqual({ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' }, cache_control });
    expect(block('image', 'PROVIDER_FILE')).toEqual({
      type: 'image',
      source: { type: 'file', file_id: 'file_011CNha8iCJcU1wXNR6q4V8w' },
      cache_control,
    });
    expect(block('document', 'URL')).toEqual({
      type: 'document',
      title: 'a.pdf',
      source: { type: 'url', url: 'https://example.com/a.pdf' },
      cache_control,
    });
    expect(block('document', 'PROVIDER_FILE')).toEqual({
      type: 'document',
      title: 'a.pdf',
      source: { type: 'file', file_id: 'file_011CNha8iCJcU1wXNR6q4V8w' },
      cache_control,
    });
    expect(held('ANTHROPIC_MESSAGES', 'image', 'PROVIDER_FILE').r.decisions[0].reason).toContain(
      'anthropic-beta header files-api-2025-04-14',
    );
    expect(held('ANTHROPIC_MESSAGES', 'image', 'URL').r.decisions[0].reason).toBe('Kept: the newest user message is always kept.');
  });

  it('GEMINI: fileData with the URL or the Files API URI', () => {
    const part = (media: 'image' | 'document', holding: Holding) =>
      (held('GEMINI', media, holding).r.payload as GeminiPayload).contents[0].parts[1];
    expect(part('image', 'URL')).toEqual({ fileData: { mimeType: 'image/png', fileUri: 'https://example.com/a.png' } });
    expect(part('document', 'PROVIDER_FILE')).toEqual({
      fileData: { mimeType: 'application/pdf', fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/abc123' },
    });
  });

  it("a file uploaded to another provider is NOT_SENDABLE in a provider's format, sent as it is in GENERIC", () => {
    const { r, sent } = held('GEMINI', 'image', 'PROVIDER_FILE', 'openai');
    expect(sent).toBe('placeholder');
    expect(r.attachmentProblems).toEqual([
      {
        attachmentId: 'a',
        name: 'a.png',
        mimeType: 'image/png',
        messageId: 'm0',
        problem: 'NOT_SENDABLE',
        detail:
          'Attachment "a.png" (image/png) was not sent: GEMINI cannot send a file uploaded to openai (a file id is valid only with the provider that issued it); a placeholder was sent instead.',
      },
    ]);
    expect(held('GENERIC', 'image', 'PROVIDER_FILE', 'google').sent).toBe('media');
  });
});

describe('in a tool result', () => {
  const image = mediaAttachment('shot', 'image', 'BYTES');
  const pdf = mediaAttachment('report', 'document', 'URL');
  const context = (format: ContextFormat) => run(toolRound(image.part, pdf.part), [image.attachment, pdf.attachment], { format });

  it("OPENAI_RESPONSES: the result's output becomes a list, its content first", () => {
    const input = (context('OPENAI_RESPONSES').payload as OpenAiResponsesPayload).input;
    expect(input[2]).toEqual({
      type: 'function_call_output',
      call_id: 'c1',
      output: [
        { type: 'input_text', text: 'Captured.' },
        { type: 'input_image', image_url: `data:image/png;base64,${PNG64}`, detail: 'auto' },
        { type: 'input_file', file_url: 'https://example.com/report.pdf' },
      ],
    });
    expect(input).toHaveLength(4); // no extra user message
  });

  it("ANTHROPIC_MESSAGES: the tool_result's content becomes blocks, its text first", () => {
    const messages = (context('ANTHROPIC_MESSAGES').payload as AnthropicMessagesPayload).messages;
    expect((messages[2].content as unknown[])[0]).toEqual({
      type: 'tool_result',
      tool_use_id: 'c1',
      content: [
        { type: 'text', text: 'Captured.' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG64 } },
        { type: 'document', title: 'report.pdf', source: { type: 'url', url: 'https://example.com/report.pdf' } },
      ],
    });
  });

  it('OPENAI_CHAT and GEMINI: a placeholder and NOT_SENDABLE, saying why', () => {
    const chat = context('OPENAI_CHAT');
    expect(chat.attachmentProblems.map((p) => [p.attachmentId, p.problem])).toEqual([
      ['shot', 'NOT_SENDABLE'],
      ['report', 'NOT_SENDABLE'],
    ]);
    expect(chat.attachmentProblems[0].detail).toBe(
      'Attachment "shot.png" (image/png) was not sent: OPENAI_CHAT cannot send an image in a TOOL message (a tool message holds text only); a placeholder was sent instead.',
    );
    const sent = (chat.payload as OpenAiChatPayload).messages;
    expect(sent[2]).toEqual({ role: 'tool', tool_call_id: 'c1', content: 'Captured.' });
    expect(JSON.stringify(sent[3])).toContain('omitted=\\"not sent: OPENAI_CHAT cannot send an image in a TOOL message');
    const gemini = context('GEMINI');
    expect(gemini.attachmentProblems.map((p) => p.problem)).toEqual(['NOT_SENDABLE', 'NOT_SENDABLE']);
    expect(gemini.attachmentProblems[0].detail).toContain('GEMINI cannot send an image in a TOOL message');
  });

  it('a medium before any result goes in the first result; one after a result in that one', () => {
    const before = mediaAttachment('before', 'image', 'URL');
    const after = mediaAttachment('after', 'image', 'URL');
    const messages = [
      msg(0, 'USER', [text('Two screenshots.')]),
      msg(1, 'ASSISTANT', [call('c1', 'screenshot', {}), call('c2', 'screenshot', {})]),
      msg(2, 'TOOL', [before.part, result('c1', 'one'), result('c2', 'two'), after.part]),
      msg(3, 'USER', [text('Compare.')]),
    ];
    const input = (run(messages, [before.attachment, after.attachment], { format: 'OPENAI_RESPONSES' }).payload as OpenAiResponsesPayload)
      .input;
    expect(input.slice(3, 5)).toEqual([
      {
        type: 'function_call_output',
        call_id: 'c1',
        output: [
          { type: 'input_text', text: 'one' },
          { type: 'input_image', image_url: 'https://example.com/before.png', detail: 'auto' },
        ],
      },
      {
        type: 'function_call_output',
        call_id: 'c2',
        output: [
          { type: 'input_text', text: 'two' },
          { type: 'input_image', image_url: 'https://example.com/after.png', detail: 'auto' },
        ],
      },
    ]);
  });
});

describe('places no format documents', () => {
  it.each([['SYSTEM'], ['ASSISTANT']] as Array<[MessageRole]>)('%s: a placeholder in every provider format', (role) => {
    const image = mediaAttachment('img', 'image', 'URL');
    const messages = [msg(0, 'USER', [text('Hi.')]), msg(1, role, [text('Here.'), image.part]), msg(2, 'USER', [text('Thanks.')])];
    for (const format of FORMATS) {
      const r = run(messages, [image.attachment], { format });
      const problems = r.attachmentProblems.map((p) => p.problem);
      expect(problems, format).toEqual(format === 'GENERIC' ? [] : ['NOT_SENDABLE']);
      if (format !== 'GENERIC') expect(r.attachmentProblems[0].detail).toContain(`${format} cannot send an image in`);
    }
  });

  it('GEMINI: a GIF is a placeholder; an animated GIF is one in the OpenAI formats', () => {
    const still = mediaAttachment('still', 'image', 'BYTES', { mimeType: 'image/gif', bytes: gif(1) });
    const moving = mediaAttachment('moving', 'image', 'BYTES', { mimeType: 'image/gif', bytes: gif(2) });
    const problems = (format: ContextFormat) =>
      run([asking(still.part, moving.part)], [still.attachment, moving.attachment], { format }).attachmentProblems.map(
        (p) => p.attachmentId,
      );
    expect(problems('GEMINI')).toEqual(['still', 'moving']);
    expect(problems('OPENAI_CHAT')).toEqual(['moving']);
    expect(problems('OPENAI_RESPONSES')).toEqual(['moving']);
    expect(problems('ANTHROPIC_MESSAGES')).toEqual([]);
  });
});

describe('what is not an image or a PDF, or is not loaded', () => {
  it('BYTES not loaded: a placeholder and CONTEXT_CAP_REACHED; UNREADABLE when the loader says why', () => {
    const capped = mediaAttachment('capped', 'image', 'BYTES', { bytes: null });
    const broken = mediaAttachment('broken', 'document', 'BYTES', { bytes: null, problem: 'storage unavailable' });
    const r = run([asking(capped.part, broken.part)], [capped.attachment, broken.attachment], { format: 'ANTHROPIC_MESSAGES' });
    expect(r.attachmentProblems.map((p) => [p.attachmentId, p.problem])).toEqual([
      ['capped', 'CONTEXT_CAP_REACHED'],
      ['broken', 'UNREADABLE'],
    ]);
    expect(r.attachmentProblems[0].detail).toContain("the context's cap on image and file bytes");
    expect(r.attachmentProblems[1].detail).toContain('storage unavailable');
    expect(r.messages[0].parts.map((p) => p.type)).toEqual(['text', 'text', 'text']);
  });

  it('a rule that refuses is asked before the bytes: a format that cannot send them needs none loaded', () => {
    const image = mediaAttachment('img', 'image', 'BYTES', { bytes: null });
    const r = run(toolRound(image.part), [image.attachment], { format: 'OPENAI_CHAT' });
    expect(r.attachmentProblems.map((p) => p.problem)).toEqual(['NOT_SENDABLE']);
  });

  it('BYTES of a text type are inlined as text, anything else is NOT_TEXT; a URL that is not an image or a PDF is NOT_SENDABLE', () => {
    const notes: ResolvedAttachment = {
      id: 'notes',
      name: 'notes.txt',
      mimeType: 'text/plain',
      size: 5,
      content: 'hello',
      kind: 'BYTES',
      bytes: Buffer.from('hello'),
    };
    const zip: ResolvedAttachment = {
      id: 'zip',
      name: 'a.zip',
      mimeType: 'application/zip',
      size: 3,
      content: null,
      kind: 'BYTES',
      bytes: Buffer.from('PK!'),
    };
    const page: ResolvedAttachment = {
      id: 'page',
      name: 'page.html',
      mimeType: 'text/html',
      size: 0,
      content: null,
      kind: 'URL',
      url: 'https://example.com/',
    };
    const parts = [
      attachmentPart('notes', 'notes.txt'),
      attachmentPart('zip', 'a.zip', 'application/zip'),
      attachmentPart('page', 'page.html', 'text/html'),
    ];
    const r = run([asking(...parts)], [notes, zip, page], { format: 'OPENAI_CHAT' });
    expect(r.messages[0].parts[1]).toMatchObject({
      type: 'text',
      text: '<attachment name="notes.txt" mime="text/plain">\nhello\n</attachment>',
    });
    expect(r.attachmentProblems.map((p) => [p.attachmentId, p.problem])).toEqual([
      ['zip', 'NOT_TEXT'],
      ['page', 'NOT_SENDABLE'],
    ]);
    expect(r.attachmentProblems[1].detail).toContain('the server never fetches a URL');
  });

  it('a TEXT attachment with an image type is NOT_TEXT, as before', () => {
    const legacy: ResolvedAttachment = { id: 'old', name: 'old.png', mimeType: 'image/png', size: 4, content: null };
    const r = run([asking(attachmentPart('old', 'old.png', 'image/png'))], [legacy], { format: 'ANTHROPIC_MESSAGES' });
    expect(r.attachmentProblems.map((p) => p.problem)).toEqual(['NOT_TEXT']);
  });

  it('REFERENCE mode references text and still sends media as media', () => {
    const image = mediaAttachment('img', 'image', 'BYTES');
    const notes: ResolvedAttachment = { id: 'notes', name: 'notes.txt', mimeType: 'text/plain', size: 5, content: null, chars: 5 };
    const r = run([asking(image.part, attachmentPart('notes'))], [image.attachment, notes], {
      format: 'OPENAI_RESPONSES',
      attachmentMode: 'REFERENCE',
    });
    expect(r.messages[0].parts.map((p) => p.type)).toEqual(['text', 'media', 'text']);
    expect(r.messages[0].parts[2]).toMatchObject({ text: expect.stringContaining('<attachment_ref id="notes"') });
  });
});

describe('token counts', () => {
  const image = mediaAttachment('img', 'image', 'BYTES');
  const pdf = mediaAttachment('doc', 'document', 'BYTES');

  it("a media part counts its provider's rule, whatever the encoding, and nothing of its base64", () => {
    for (const encoding of ['O200K_BASE', 'CL100K_BASE', 'CHARS_DIV_4'] as const) {
      const chat = run([asking(image.part, pdf.part)], [image.attachment, pdf.attachment], { format: 'OPENAI_CHAT', encoding });
      expect(chat.messages[0].tokenCount, encoding).toBe(countTokens('Look.', encoding) + 765 + documentPageTokens('OPENAI_CHAT') + 4);
      const anthropic = run([asking(image.part)], [image.attachment], { format: 'ANTHROPIC_MESSAGES', encoding });
      expect(anthropic.messages[0].tokenCount).toBe(countTokens('Look.', encoding) + anthropicImageTokens(1024, 768) + 4);
      const gemini = run([asking(image.part, pdf.part)], [image.attachment, pdf.attachment], { format: 'GEMINI', encoding });
      expect(gemini.messages[0].tokenCount).toBe(countTokens('Look.', encoding) + 4 * 258 + 258);
    }
  });

  it('OPENAI_RESPONSES: media inside a result add no message of their own', () => {
    const r = run(toolRound(image.part), [image.attachment], { format: 'OPENAI_RESPONSES' });
    expect(r.messages[2].tokenCount).toBe(4 + countTokens('Captured.', 'O200K_BASE') + 765);
    // In OPENAI_CHAT the placeholder is a user message of its own: 4 more, and its text.
    const chat = run(toolRound(image.part), [image.attachment], { format: 'OPENAI_CHAT' });
    const placeholder = chat.messages[2].parts[1];
    expect(placeholder.type).toBe('text');
    expect(chat.messages[2].tokenCount).toBe(
      4 + countTokens('Captured.', 'O200K_BASE') + 4 + countTokens((placeholder as { text: string }).text, 'O200K_BASE'),
    );
  });

  it('the budget counts media: a message its image does not fit in is dropped', () => {
    const messages = [asking(image.part), msg(1, 'ASSISTANT', [text('A photo.')]), msg(2, 'USER', [text('Thanks.')])];
    const full = run(messages, [image.attachment], { format: 'OPENAI_CHAT' });
    expect(full.tokenCount).toBeGreaterThan(765);
    const tight = run(messages, [image.attachment], { format: 'OPENAI_CHAT', maxTokens: full.tokenCount - 1 });
    expect(tight.decisions[0].decision).toBe('DROPPED_BUDGET');
    expect(run(messages, [image.attachment], { format: 'OPENAI_CHAT', maxTokens: full.tokenCount }).droppedMessageCount).toBe(0);
  });
});

describe('contextHash with inline media', () => {
  it.each(FORMATS)('%s: the sha256 of the payload with each base64 replaced by its attachment identity', (format) => {
    const session = mediaSession(format);
    // Bytes of their own for each attachment, so that a base64 names one attachment.
    const attachments = session.attachments.map((a) => (a.bytes ? { ...a, bytes: Buffer.concat([a.bytes, Buffer.from(a.id)]) } : a));
    const r = run(session.messages, attachments, { format });
    const expected = createHash('sha256')
      .update(canonicalJson({ encoding: 'O200K_BASE', format, payload: hashForm(r.payload, attachments) }))
      .digest('hex');
    expect(r.contextHash).toBe(expected);
  });

  it('names the data by the attachment id: other bytes under the same id hash alike, the same bytes under another id do not', () => {
    const a = mediaAttachment('img', 'image', 'BYTES');
    const hash = (attachment: ResolvedAttachment, part = a.part) =>
      run([asking(part)], [attachment], { format: 'ANTHROPIC_MESSAGES' }).contextHash;
    expect(hash({ ...a.attachment, bytes: Buffer.alloc(1_000_000, 7) })).toBe(hash(a.attachment));
    const b = mediaAttachment('img2', 'image', 'BYTES');
    expect(hash(b.attachment, b.part)).not.toBe(hash(a.attachment));
  });
});

describe('every place and source', () => {
  const ROLES: MessageRole[] = ['USER', 'TOOL', 'SYSTEM', 'ASSISTANT'];
  const HOLDINGS: Holding[] = ['BYTES', 'URL', 'PROVIDER_FILE'];
  const PROVIDERS: Provider[] = ['openai', 'anthropic', 'google'];

  it('each format either sends the medium as media or a placeholder with a problem, within its provider rules', () => {
    for (const format of FORMATS) {
      for (const role of ROLES) {
        for (const media of ['image', 'document'] as const) {
          for (const holding of HOLDINGS) {
            for (const provider of holding === 'PROVIDER_FILE' ? PROVIDERS : (['openai'] as const)) {
              const a = mediaAttachment('a', media, holding, { provider });
              const messages =
                role === 'TOOL'
                  ? toolRound(a.part)
                  : [msg(0, 'USER', [text('Hi.')]), msg(1, role, [text('Here.'), a.part]), msg(2, 'USER', [text('Go on.')])];
              const where = `${format} ${role} ${media} ${holding} ${provider}`;
              const r = run(messages, [a.attachment], { format });
              const part = r.messages
                .flatMap((m) => m.parts)
                .find((p) => p.type === 'media' || (p.type === 'text' && p.text.includes('name="a.')));
              expect(part, where).toBeDefined();
              if (part!.type === 'media') expect(r.attachmentProblems, where).toEqual([]);
              else
                expect(
                  r.attachmentProblems.map((p) => p.problem),
                  where,
                ).toEqual(['NOT_SENDABLE']);
              if (format !== 'GENERIC') expect(payloadViolations(format, r.payload), where).toEqual([]);
            }
          }
        }
      }
    }
  });
});
