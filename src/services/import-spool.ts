/**
 * The checked lines of an import body, kept between the check and the write: in memory while
 * small, then in a temporary file, so that the write's transaction opens only once the whole body
 * has arrived and passed (a slow client never holds a transaction open) and memory stays bounded.
 */
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const IN_MEMORY_CHARS = 1024 * 1024;

export class ImportSpool {
  private lines: string[] = [];
  private chars = 0;
  private file: { dir: string; path: string; stream: WriteStream } | null = null;

  /** Keeps one line (blank ones too, so that numbers stay those of the body). */
  async add(line: string): Promise<void> {
    if (!this.file) {
      this.lines.push(line);
      this.chars += line.length;
      if (this.chars <= IN_MEMORY_CHARS) return;
      const dir = await mkdtemp(join(tmpdir(), 'session-graph-import-'));
      const path = join(dir, 'lines.jsonl');
      this.file = { dir, path, stream: createWriteStream(path, { encoding: 'utf8' }) };
      const held = this.lines;
      this.lines = [];
      for (const kept of held) await this.write(kept);
      return;
    }
    await this.write(line);
  }

  private async write(line: string): Promise<void> {
    const stream = this.file!.stream;
    if (!stream.write(`${line}\n`)) await new Promise<void>((resolve) => stream.once('drain', () => resolve()));
  }

  /** The lines kept, in order. */
  async *read(): AsyncGenerator<string> {
    if (!this.file) {
      yield* this.lines;
      return;
    }
    const { stream, path } = this.file;
    await new Promise<void>((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve())));
    const input = createReadStream(path, { encoding: 'utf8' });
    try {
      yield* createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
    } finally {
      input.destroy();
    }
  }

  /** Removes the temporary file, if one was made. */
  async close(): Promise<void> {
    this.lines = [];
    if (!this.file) return;
    const { stream, dir } = this.file;
    this.file = null;
    stream.destroy();
    await rm(dir, { recursive: true, force: true });
  }
}
