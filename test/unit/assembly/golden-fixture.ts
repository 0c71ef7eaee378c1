/** The conversation behind the golden payload files (test/golden/*.json): text, a tool round, a text attachment, an image and a PDF. */
import type { AssembleContextInput, ContextFormat } from '../../../src/domain/assembly/index.js';
import { attachmentPart, call, callJson, makeInput, msg, result, text, textAttachment } from './helpers.js';
import { hashForm, PDF, PNG } from './media-fixture.js';

export function goldenInput(format: ContextFormat): AssembleContextInput {
  const messages = [
    msg(0, 'USER', [text('Plan a trip to Paris.')]),
    msg(1, 'ASSISTANT', [text('Sure: when are you going?')]),
    msg(2, 'USER', [
      text('What is the weather in Paris and Berlin? My notes, a photo and the itinerary are attached.'),
      attachmentPart('att_notes', 'notes <v2>.md', 'text/markdown'),
      {
        type: 'attachment',
        attachmentId: 'att_photo',
        name: 'sky.png',
        mimeType: 'image/png',
        size: PNG.length,
        kind: 'BYTES',
        width: 1,
        height: 1,
      },
      {
        type: 'attachment',
        attachmentId: 'att_itinerary',
        name: 'itinerary.pdf',
        mimeType: 'application/pdf',
        size: PDF.length,
        kind: 'BYTES',
        pages: 1,
      },
    ]),
    msg(3, 'ASSISTANT', [
      text('Checking both cities.'),
      call('call_paris', 'get_weather', { city: 'Paris', units: 'metric' }),
      // Given as the model's own arguments text: sent byte for byte (key order, spaces, 1.0, escapes).
      callJson('call_berlin', 'get_weather', '{"units": "metric", "city": "Berlin", "days": 1.0, "note": "caf\\u00e9"}'),
    ]),
    msg(4, 'TOOL', [result('call_paris', '{"temp_c":18,"sky":"clear"}'), result('call_berlin', 'upstream timeout', true)]),
    msg(5, 'ASSISTANT', [text('Paris: 18 °C and clear. The Berlin lookup timed out.')]),
    msg(6, 'USER', [text('Thanks! Should I pack an umbrella?')]),
  ];
  return makeInput(
    messages,
    {
      format,
      encoding: 'O200K_BASE',
      system: 'You are a concise travel assistant.',
      turnContext: { locale: 'en-GB', now: '2025-05-01T09:30:00Z', user: { name: 'Ada', plan: 'pro' } },
    },
    {
      compaction: { id: 'cmp_1', uptoIndex: 2, summary: 'The user is planning a trip to Paris in May.', tokens: null },
      attachments: [
        textAttachment('att_notes', '# Notes\nBring a coat & <maybe> an umbrella.', 'notes <v2>.md', 'text/markdown'),
        {
          id: 'att_photo',
          name: 'sky.png',
          mimeType: 'image/png',
          size: PNG.length,
          content: null,
          kind: 'BYTES',
          bytes: PNG,
          width: 1,
          height: 1,
        },
        {
          id: 'att_itinerary',
          name: 'itinerary.pdf',
          mimeType: 'application/pdf',
          size: PDF.length,
          content: null,
          kind: 'BYTES',
          bytes: PDF,
          pages: 1,
        },
      ],
    },
  );
}

/** A golden payload as contextHash covers it: the photo's and the itinerary's base64 written as their identity. */
export const goldenHashForm = (payload: unknown) =>
  hashForm(payload, [
    { id: 'att_photo', mimeType: 'image/png', bytes: PNG },
    { id: 'att_itinerary', mimeType: 'application/pdf', bytes: PDF },
  ]);
