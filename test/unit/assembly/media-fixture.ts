/** Image and PDF bytes for the media tests: small, and what real encoders write. */

/** A GIF89a of `frames` 1×1 frames (a NETSCAPE2.0 loop extension when animated), as an encoder writes it. */
export function gif(frames: number): Uint8Array {
  const bytes = [...Buffer.from('GIF89a'), 1, 0, 1, 0, 0x80, 0, 0, 0, 0, 0, 255, 255, 255];
  if (frames > 1) bytes.push(0x21, 0xff, 11, ...Buffer.from('NETSCAPE2.0'), 3, 1, 0, 0, 0);
  for (let i = 0; i < frames; i++) {
    bytes.push(0x21, 0xf9, 4, 0, 10, 0, 0, 0); // graphic control extension
    bytes.push(0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0); // image descriptor, no local colour table
    bytes.push(2, 2, 0x44, 0x01, 0); // LZW minimum code size, one sub-block, terminator
  }
  bytes.push(0x3b);
  return Uint8Array.from(bytes);
}
