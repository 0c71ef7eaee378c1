/** Context assembly: the pure pipeline (`runAssembly`) behind the `assembleContext` mutation, and its named steps. */
export { runAssembly } from './pipeline.js';
export * from './types.js';
export { validateAssembleOptions } from './validate.js';
export { dropGenerating } from './drop-generating.js';
export { applyCompaction, renderSummary, type CompactionStepResult } from './compaction.js';
export { elideOldToolResults, type ElideStepResult } from './elide.js';
export { hideMessages, stripToolOutputs } from './history-transforms.js';
export { capMaxMessages, keepNewestUnits, type KeepNewestOptions, type KeepNewestResult } from './max-messages.js';
export { fitTokenBudget, type FitBudgetOptions, type FitBudgetResult } from './fit-budget.js';
export { payloadPrefixOf, PREFIX_HASH_BYTES, reusedPrefixTokens, samePrefix, type PayloadPrefix } from './payload-prefix.js';
export { stablePrefixCut, stablePrefixReason, type StablePrefixOptions } from './stable-prefix.js';
export * from './attachment-tool.js';
export {
  escapeXmlAttribute,
  escapeXmlText,
  isTextMimeType,
  renderAttachmentBlock,
  renderAttachmentPlaceholder,
  truncateAtBoundary,
} from './attachment-text.js';
export {
  createAttachmentResolver,
  resolveAttachments,
  sendsMediaInResults,
  type AttachmentCaps,
  type AttachmentResolver,
  type MessageAttachments,
  type ResolvedBlock,
  type ResolvedMedia,
  type ResolvedMessage,
} from './attachments.js';
export * from './media-rules.js';
export * from './media-tokens.js';
export { escapeJsonForMarkup, isPlainObject, renderTurnContext } from './turn-context.js';
export {
  assertToolInvariants,
  buildUnits,
  findToolInvariantViolations,
  repairToolPairs,
  isRoundHead,
  toolShapeOf,
  type ShapeView,
  type ToolCheckMessage,
  type ToolPairExplainer,
  type ToolShape,
  type Unit,
} from './tool-rounds.js';
export * from './formats.js';
export * from './payload-anthropic.js';
export * from './payload-gemini.js';
export * from './payload-generic.js';
export * from './payload-openai.js';
export { toolArgumentsValue, toolInputObject } from './payload-pieces.js';
export { canonicalJson, contextHash } from './hash.js';
export { countCodePoints } from '../tokens.js';
export { createToolPairExplainer, DecisionLog } from './decisions.js';
export {
  label,
  newestUserIndex,
  toolResultStub,
  toolResultStubTokens,
  shapeOf,
  toWork,
  workContentTokens,
  workParts,
  type StepResult,
  type WorkMessage,
} from './work.js';
