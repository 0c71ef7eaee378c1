/**
 * The load process's two channels: progress for a person on stderr, and JSON for the runner on
 * stdout, one value per line (bench/proc.ts reads the last line as the result; `hold` also prints
 * its ready line before it).
 */

export function log(message: string): void {
  process.stderr.write(`    (load) ${message}\n`);
}

export function printLine(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}
