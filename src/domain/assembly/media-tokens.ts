/**
 * What an image or a PDF sent as a provider's own block counts, by each provider's published rule
 * (the sources are named at each rule; docs/attachments.md lists them with their tests). The
 * providers' count endpoints are the only exact figures; these are what a budget can be fitted by
 * without a call. The count does not depend on the text encoding, and nothing of the base64 is
 * counted as text.
 *
 * Which rule a format uses: OPENAI_CHAT, OPENAI_RESPONSES and GENERIC the OpenAI rule (GENERIC is
 * counted as OPENAI_CHAT throughout), ANTHROPIC_MESSAGES the Anthropic rule, GEMINI the Gemini rule.
 */
import type { ContextFormat } from './types.js';

/**
 * OpenAI, tile-based models (GPT-4o, GPT-4.1, GPT-4.5: base 85, 170 per tile), `detail: high`
 * (`auto`, which every payload sends, is counted as high: the model may choose it). Source:
 * https://platform.openai.com/docs/guides/images-vision, "Calculating costs": scale to fit within
 * 2048 × 2048, then so that the shortest side is 768 px, count the 512 px tiles; 85 + 170 × tiles.
 * The guide does not say whether the second step enlarges a small image; as its worked examples and
 * the widely used implementations do, it only shrinks. Pixel sizes are whole after each step.
 */
export const OPENAI_IMAGE_BASE_TOKENS = 85;
export const OPENAI_IMAGE_TILE_TOKENS = 170;

export function openAiImageTokens(width: number, height: number): number {
  let w = width;
  let h = height;
  const fit = Math.min(1, 2048 / Math.max(w, h));
  w = Math.max(1, Math.floor(w * fit));
  h = Math.max(1, Math.floor(h * fit));
  const short = Math.min(1, 768 / Math.min(w, h));
  w = Math.max(1, Math.floor(w * short));
  h = Math.max(1, Math.floor(h * short));
  return OPENAI_IMAGE_BASE_TOKENS + OPENAI_IMAGE_TILE_TOKENS * Math.ceil(w / 512) * Math.ceil(h / 512);
}

/** An Anthropic resolution tier: the longest edge and the visual tokens an image is resized within. */
export interface AnthropicTier {
  maxEdge: number;
  maxTokens: number;
}

/** Standard tier: every model the docs do not list as high-resolution. */
export const ANTHROPIC_STANDARD_TIER: AnthropicTier = { maxEdge: 1568, maxTokens: 1568 };
/** High-resolution tier: the newest models (the docs list them; the list changes as models ship). */
export const ANTHROPIC_HIGH_RES_TIER: AnthropicTier = { maxEdge: 2576, maxTokens: 4784 };

const patches = (w: number, h: number) => Math.ceil(w / 28) * Math.ceil(h / 28);

function roundHalfToEven(v: number): number {
  const f = Math.floor(v);
  return v - f !== 0.5 ? Math.round(v) : f % 2 === 0 ? f : f + 1;
}

/**
 * The size Claude resizes an image to: the largest aspect-preserving size whose edges, padded to
 * multiples of 28, fit the tier's edge and whose 28 × 28 patches fit its token cap. Transcribed from
 * the docs' reference implementation (a binary search on the long edge, the short edge rounded half
 * to even): https://platform.claude.com/docs/en/build-with-claude/vision-coordinates, "How Claude
 * resizes and pads images".
 */
export function anthropicResizedSize(width: number, height: number, tier: AnthropicTier = ANTHROPIC_STANDARD_TIER): [number, number] {
  const fits = (a: number, b: number) =>
    Math.ceil(a / 28) * 28 <= tier.maxEdge && Math.ceil(b / 28) * 28 <= tier.maxEdge && patches(a, b) <= tier.maxTokens;
  if (fits(width, height)) return [width, height];
  if (height > width) {
    const [h, w] = anthropicResizedSize(height, width, tier);
    return [w, h];
  }
  const ratio = width / height;
  let lo = 1;
  let hi = width;
  while (lo + 1 < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (fits(mid, Math.max(roundHalfToEven(mid / ratio), 1))) lo = mid;
    else hi = mid;
  }
  return [lo, Math.max(roundHalfToEven(lo / ratio), 1)];
}

/**
 * Anthropic: one visual token per 28 × 28 patch of the resized image, ⌈w/28⌉ × ⌈h/28⌉. Source:
 * https://platform.claude.com/docs/en/build-with-claude/vision, "Resolution and token cost".
 * Assembly does not know the model, so an image is counted in the high-resolution tier: the larger
 * count for an image over ~1.2 megapixels (1920 × 1080: 2691 against 1560), so that a budget is
 * never overrun; a smaller image counts the same in both tiers.
 */
export function anthropicImageTokens(width: number, height: number, tier: AnthropicTier = ANTHROPIC_HIGH_RES_TIER): number {
  const [w, h] = anthropicResizedSize(width, height, tier);
  return patches(w, h);
}

/**
 * Gemini 2.x: 258 tokens when both sides are at most 384 px; otherwise 258 per tile, the tiles
 * being crop units of ⌊min(w, h) / 1.5⌋ px, ⌈w / unit⌉ × ⌈h / unit⌉ of them (the doc calls it a
 * rough formula; its example, 960 × 540 → 6 tiles → 1548, needs the ceilings). Source:
 * https://ai.google.dev/gemini-api/docs/image-understanding and https://ai.google.dev/gemini-api/docs/tokens.
 * Gemini 3 models spend at most their media resolution instead (1120 per image by default,
 * https://ai.google.dev/gemini-api/docs/media-resolution); this rule is not changed for them.
 */
export const GEMINI_TILE_TOKENS = 258;

export function geminiImageTokens(width: number, height: number): number {
  if (width <= 384 && height <= 384) return GEMINI_TILE_TOKENS;
  const unit = Math.max(1, Math.floor(Math.min(width, height) / 1.5));
  return GEMINI_TILE_TOKENS * Math.ceil(width / unit) * Math.ceil(height / unit);
}

/**
 * An image whose size assembly does not know (by URL, by provider file) is counted as a
 * 2048 × 2048 one: about what a phone photo counts under each rule (OpenAI 765, Anthropic 4761 in
 * the high-resolution tier, Gemini 1032).
 */
export const UNKNOWN_IMAGE_SIDE = 2048;

/** A PDF whose page count assembly does not know (by URL, by provider file) is counted as this many pages. */
export const UNKNOWN_DOCUMENT_PAGES = 10;

/**
 * Extracted text of a PDF page, an estimate: the middle of Anthropic's published "1,500-3,000
 * tokens per page depending on content density" (https://platform.claude.com/docs/en/build-with-claude/pdf-support,
 * "Estimate your costs"). OpenAI publishes no figure (its file-inputs guide only says a PDF is sent
 * as its extracted text and an image of each page), so the same figure stands for it.
 */
export const PDF_TEXT_TOKENS_PER_PAGE = 2_250;

/** A page's image is counted as a US Letter page rendered at 200 dpi (1700 × 2200 px) by the provider's image rule. */
const PAGE_WIDTH = 1700;
const PAGE_HEIGHT = 2200;

/**
 * Tokens per PDF page. GEMINI: 258, published ("Each document page is equivalent to 258 tokens",
 * https://ai.google.dev/gemini-api/docs/document-processing). OPENAI_* and GENERIC, an estimate:
 * the text figure above plus the page as a high-detail image (765). ANTHROPIC_MESSAGES, an
 * estimate: the text figure plus the page as an image in the standard tier (Anthropic renders pages
 * at a size it does not publish; 1496).
 */
export function documentPageTokens(format: ContextFormat): number {
  switch (format) {
    case 'GEMINI':
      return GEMINI_TILE_TOKENS;
    case 'ANTHROPIC_MESSAGES':
      return PDF_TEXT_TOKENS_PER_PAGE + anthropicImageTokens(PAGE_WIDTH, PAGE_HEIGHT, ANTHROPIC_STANDARD_TIER);
    default:
      return PDF_TEXT_TOKENS_PER_PAGE + openAiImageTokens(PAGE_WIDTH, PAGE_HEIGHT);
  }
}

/** Tokens of an image in `format` (unknown dimensions: `UNKNOWN_IMAGE_SIDE` square). */
export function imageTokens(format: ContextFormat, width?: number | null, height?: number | null): number {
  const known = width != null && height != null && width > 0 && height > 0;
  const w = known ? width : UNKNOWN_IMAGE_SIDE;
  const h = known ? height : UNKNOWN_IMAGE_SIDE;
  switch (format) {
    case 'ANTHROPIC_MESSAGES':
      return anthropicImageTokens(w, h);
    case 'GEMINI':
      return geminiImageTokens(w, h);
    default:
      return openAiImageTokens(w, h);
  }
}

/** Tokens of a PDF in `format` (unknown page count: `UNKNOWN_DOCUMENT_PAGES`). */
export function documentTokens(format: ContextFormat, pages?: number | null): number {
  const n = pages != null && pages > 0 ? pages : UNKNOWN_DOCUMENT_PAGES;
  return n * documentPageTokens(format);
}
