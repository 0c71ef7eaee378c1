import { describe, expect, it } from 'vitest';
import {
  ANTHROPIC_HIGH_RES_TIER,
  ANTHROPIC_STANDARD_TIER,
  anthropicImageTokens,
  anthropicResizedSize,
  documentPageTokens,
  documentTokens,
  geminiImageTokens,
  imageTokens,
  openAiImageTokens,
  UNKNOWN_DOCUMENT_PAGES,
} from '../../../src/domain/assembly/media-tokens.js';

describe('OpenAI image tokens (images-vision guide, "Calculating costs", gpt-4o constants, detail high)', () => {
  it("counts the guide's worked examples", () => {
    expect(openAiImageTokens(1024, 1024)).toBe(765); // → 768×768, 4 tiles
    expect(openAiImageTokens(2048, 4096)).toBe(1105); // → 1024×2048 → 768×1536, 6 tiles
  });

  it('a 1024 × 768 image counts 765 (shortest side already 768: 2 × 2 tiles)', () => {
    expect(openAiImageTokens(1024, 768)).toBe(765);
    expect(openAiImageTokens(768, 1024)).toBe(765);
  });

  it('a small image is not enlarged: one tile', () => {
    expect(openAiImageTokens(100, 100)).toBe(85 + 170);
    expect(openAiImageTokens(512, 512)).toBe(85 + 170);
    expect(openAiImageTokens(513, 512)).toBe(85 + 2 * 170);
  });

  it('a very large or very long image is fitted first', () => {
    expect(openAiImageTokens(8000, 6000)).toBe(765); // → 2048×1536 → 1024×768
    expect(openAiImageTokens(8000, 100)).toBe(85 + 4 * 170); // → 2048×25, 4 tiles across
  });
});

describe('Anthropic image tokens (vision guide, "Resolution and token cost"; vision-coordinates resize rule)', () => {
  // The docs' table: image → standard tier, high-resolution tier.
  const table: Array<[number, number, number, number]> = [
    [200, 200, 64, 64],
    [1000, 1000, 1296, 1296],
    [1092, 1092, 1521, 1521],
    [1920, 1080, 1560, 2691],
    [2000, 1500, 1564, 3888],
    [3840, 2160, 1560, 4784],
  ];
  it.each(table)('%i × %i: %i standard, %i high-resolution', (w, h, standard, high) => {
    expect(anthropicImageTokens(w, h, ANTHROPIC_STANDARD_TIER)).toBe(standard);
    expect(anthropicImageTokens(w, h, ANTHROPIC_HIGH_RES_TIER)).toBe(high);
  });

  it("resizes as the docs' reference implementation does", () => {
    expect(anthropicResizedSize(1075, 1520)).toEqual([924, 1307]);
    expect(anthropicResizedSize(1920, 1080, ANTHROPIC_STANDARD_TIER)).toEqual([1456, 819]);
    expect(anthropicResizedSize(3840, 2160, ANTHROPIC_HIGH_RES_TIER)).toEqual([2576, 1449]);
    expect(anthropicResizedSize(1080, 1920, ANTHROPIC_STANDARD_TIER)).toEqual([819, 1456]);
  });

  it('counts in the high-resolution tier by default (the model is not known: never under a budget)', () => {
    expect(anthropicImageTokens(1920, 1080)).toBe(2691);
  });
});

describe('Gemini image tokens (image-understanding and tokens guides)', () => {
  it('258 when both sides are at most 384 px', () => {
    expect(geminiImageTokens(384, 384)).toBe(258);
    expect(geminiImageTokens(10, 300)).toBe(258);
  });

  it("258 per crop-unit tile otherwise: the guide's 960 × 540 is 6 tiles", () => {
    expect(geminiImageTokens(960, 540)).toBe(1548);
    expect(geminiImageTokens(1024, 1024)).toBe(4 * 258);
    expect(geminiImageTokens(385, 384)).toBe(4 * 258); // unit 256: 2 × 2
  });
});

describe('per format', () => {
  it('an image uses its format rule; GENERIC and both OpenAI formats the OpenAI one', () => {
    expect(imageTokens('OPENAI_CHAT', 1024, 768)).toBe(765);
    expect(imageTokens('OPENAI_RESPONSES', 1024, 768)).toBe(765);
    expect(imageTokens('GENERIC', 1024, 768)).toBe(765);
    expect(imageTokens('ANTHROPIC_MESSAGES', 1024, 768)).toBe(anthropicImageTokens(1024, 768));
    expect(imageTokens('GEMINI', 960, 540)).toBe(1548);
  });

  it('an image of unknown size counts as a 2048 × 2048 one', () => {
    expect(imageTokens('OPENAI_CHAT', null, null)).toBe(765);
    expect(imageTokens('ANTHROPIC_MESSAGES', undefined, 100)).toBe(4761);
    expect(imageTokens('GEMINI', null, null)).toBe(1032);
  });

  it('a PDF page: Gemini 258 (published), the others an estimate of text plus a page image', () => {
    expect(documentPageTokens('GEMINI')).toBe(258);
    expect(documentPageTokens('OPENAI_CHAT')).toBe(2250 + 765);
    expect(documentPageTokens('GENERIC')).toBe(2250 + 765);
    expect(documentPageTokens('ANTHROPIC_MESSAGES')).toBe(2250 + anthropicImageTokens(1700, 2200, ANTHROPIC_STANDARD_TIER));
    expect(documentTokens('GEMINI', 3)).toBe(3 * 258);
    expect(documentTokens('GEMINI', null)).toBe(UNKNOWN_DOCUMENT_PAGES * 258);
  });
});
