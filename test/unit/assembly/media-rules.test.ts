import { describe, expect, it } from 'vitest';
import {
  geminiFileUri,
  isAnimatedGif,
  type MediaCandidate,
  mediaKindOf,
  mediaNotSendableBecause,
  needsBytes,
} from '../../../src/domain/assembly/media-rules.js';
import type { ContextFormat } from '../../../src/domain/assembly/types.js';
import type { MessageRole } from '../../../src/domain/types.js';
import { gif } from './media-fixture.js';

const image = (kind: MediaCandidate['kind'], extra: Partial<MediaCandidate> = {}): MediaCandidate => ({
  media: 'image',
  mimeType: 'image/png',
  kind,
  ...extra,
});
const pdf = (kind: MediaCandidate['kind'], extra: Partial<MediaCandidate> = {}): MediaCandidate => ({
  media: 'document',
  mimeType: 'application/pdf',
  kind,
  ...extra,
});
const file = (provider: 'openai' | 'anthropic' | 'google', fileId = provider === 'google' ? 'files/abc123' : 'file-abc') => ({
  providerFile: { provider, fileId },
});

const FORMATS: ContextFormat[] = ['GENERIC', 'OPENAI_CHAT', 'OPENAI_RESPONSES', 'ANTHROPIC_MESSAGES', 'GEMINI'];
const sendable = (format: ContextFormat, role: MessageRole, c: MediaCandidate) => mediaNotSendableBecause(format, role, c) === null;

describe('media kinds', () => {
  it('PNG, JPEG, GIF and WebP are images, PDF a document; MIME parameters and case do not matter', () => {
    for (const t of ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'IMAGE/PNG', 'image/jpeg; q=1'])
      expect(mediaKindOf(t), t).toBe('image');
    expect(mediaKindOf('application/pdf')).toBe('document');
    for (const t of ['image/svg+xml', 'image/heic', 'text/plain', 'application/zip']) expect(mediaKindOf(t), t).toBeNull();
  });
});

describe('where each format sends media', () => {
  it('a USER message: every format', () => {
    for (const format of FORMATS) expect(sendable(format, 'USER', image('BYTES')), format).toBe(true);
  });

  it('a TOOL message: OPENAI_RESPONSES (function_call_output) and ANTHROPIC_MESSAGES (tool_result) only', () => {
    expect(FORMATS.filter((f) => sendable(f, 'TOOL', image('BYTES')))).toEqual(['GENERIC', 'OPENAI_RESPONSES', 'ANTHROPIC_MESSAGES']);
    expect(mediaNotSendableBecause('OPENAI_CHAT', 'TOOL', image('BYTES'))).toBe(
      'OPENAI_CHAT cannot send an image in a TOOL message (a tool message holds text only)',
    );
    expect(mediaNotSendableBecause('GEMINI', 'TOOL', pdf('BYTES'))).toContain('GEMINI cannot send a PDF in a TOOL message');
  });

  it('SYSTEM and ASSISTANT messages: no provider format', () => {
    for (const role of ['SYSTEM', 'ASSISTANT'] as const) {
      expect(
        FORMATS.filter((f) => sendable(f, role, image('URL'))),
        role,
      ).toEqual(['GENERIC']);
    }
    expect(mediaNotSendableBecause('ANTHROPIC_MESSAGES', 'ASSISTANT', image('BYTES'))).toMatch(
      /^ANTHROPIC_MESSAGES cannot send an image in an ASSISTANT message/,
    );
  });
});

describe('how media may be held', () => {
  it('OPENAI_CHAT: no image by file id, no PDF by URL', () => {
    expect(sendable('OPENAI_CHAT', 'USER', image('URL'))).toBe(true);
    expect(sendable('OPENAI_CHAT', 'USER', image('PROVIDER_FILE', file('openai')))).toBe(false);
    expect(sendable('OPENAI_CHAT', 'USER', pdf('BYTES'))).toBe(true);
    expect(sendable('OPENAI_CHAT', 'USER', pdf('PROVIDER_FILE', file('openai')))).toBe(true);
    expect(mediaNotSendableBecause('OPENAI_CHAT', 'USER', pdf('URL'))).toContain(
      'Inputs by file URL are not supported for chat completions',
    );
  });

  it('OPENAI_RESPONSES, ANTHROPIC_MESSAGES, GEMINI: bytes, URL and their own provider files', () => {
    const own = { OPENAI_RESPONSES: 'openai', ANTHROPIC_MESSAGES: 'anthropic', GEMINI: 'google' } as const;
    for (const [format, provider] of Object.entries(own) as Array<[ContextFormat, 'openai' | 'anthropic' | 'google']>) {
      for (const c of [image, pdf]) {
        expect(sendable(format, 'USER', c('BYTES')), format).toBe(true);
        expect(sendable(format, 'USER', c('URL')), format).toBe(true);
        expect(sendable(format, 'USER', c('PROVIDER_FILE', file(provider))), format).toBe(true);
        for (const other of (['openai', 'anthropic', 'google'] as const).filter((p) => p !== provider)) {
          expect(mediaNotSendableBecause(format, 'USER', c('PROVIDER_FILE', file(other)))).toBe(
            `${format} cannot send a file uploaded to ${other} (a file id is valid only with the provider that issued it)`,
          );
        }
      }
    }
  });

  it('GEMINI: a Google file by Files API name or URI', () => {
    expect(geminiFileUri('files/abc-123')).toBe('https://generativelanguage.googleapis.com/v1beta/files/abc-123');
    expect(geminiFileUri('https://generativelanguage.googleapis.com/v1beta/files/x')).toBe(
      'https://generativelanguage.googleapis.com/v1beta/files/x',
    );
    expect(geminiFileUri('gs://bucket/object')).toBeNull();
    expect(sendable('GEMINI', 'USER', image('PROVIDER_FILE', file('google', 'gs://bucket/object')))).toBe(false);
  });

  it('GENERIC sends any provider file', () => {
    for (const provider of ['openai', 'anthropic', 'google'] as const)
      expect(sendable('GENERIC', 'USER', pdf('PROVIDER_FILE', file(provider)))).toBe(true);
  });
});

describe('image types', () => {
  it('GEMINI refuses GIF', () => {
    expect(mediaNotSendableBecause('GEMINI', 'USER', image('URL', { mimeType: 'image/gif' }))).toBe(
      'GEMINI cannot send a GIF image (Gemini takes PNG, JPEG, WebP, HEIC and HEIF)',
    );
    expect(sendable('ANTHROPIC_MESSAGES', 'USER', image('URL', { mimeType: 'image/gif' }))).toBe(true);
  });

  it('the OpenAI formats refuse an animated GIF (its bytes loaded), not a still one', () => {
    const animated = image('BYTES', { mimeType: 'image/gif', bytes: gif(3) });
    const still = image('BYTES', { mimeType: 'image/gif', bytes: gif(1) });
    expect(mediaNotSendableBecause('OPENAI_CHAT', 'USER', animated)).toBe(
      'OPENAI_CHAT cannot send an animated GIF (OpenAI takes non-animated GIFs only)',
    );
    expect(sendable('OPENAI_RESPONSES', 'USER', animated)).toBe(false);
    expect(sendable('OPENAI_CHAT', 'USER', still)).toBe(true);
    expect(sendable('ANTHROPIC_MESSAGES', 'USER', animated)).toBe(true);
  });

  it('counts GIF frames by walking its blocks', () => {
    expect(isAnimatedGif(gif(1))).toBe(false);
    expect(isAnimatedGif(gif(2))).toBe(true);
    expect(isAnimatedGif(gif(2).slice(0, 40))).toBe(false);
    expect(isAnimatedGif(Buffer.from('not a gif at all'))).toBe(false);
  });
});

describe('which bytes the caller loads', () => {
  const part = (mimeType: string, kind: 'TEXT' | 'BYTES' | 'URL' = 'BYTES') =>
    ({ type: 'attachment', attachmentId: 'a', name: 'a', mimeType, size: 1, kind }) as const;
  it('a BYTES image or PDF the format sends there; nothing else', () => {
    expect(needsBytes('OPENAI_CHAT', 'USER', part('image/png'))).toBe(true);
    expect(needsBytes('OPENAI_CHAT', 'USER', part('image/gif'))).toBe(true); // its frames are counted once loaded
    expect(needsBytes('OPENAI_CHAT', 'TOOL', part('image/png'))).toBe(false);
    expect(needsBytes('GEMINI', 'USER', part('image/gif'))).toBe(false);
    expect(needsBytes('ANTHROPIC_MESSAGES', 'TOOL', part('application/pdf'))).toBe(true);
    expect(needsBytes('GENERIC', 'ASSISTANT', part('application/pdf'))).toBe(true);
    expect(needsBytes('OPENAI_CHAT', 'USER', part('text/plain'))).toBe(false);
    expect(needsBytes('OPENAI_CHAT', 'USER', part('image/png', 'URL'))).toBe(false);
    expect(needsBytes('OPENAI_CHAT', 'USER', part('image/png', 'TEXT'))).toBe(false);
  });
});
