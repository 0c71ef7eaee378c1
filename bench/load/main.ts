/**
 * The load process: `node --import tsx bench/load/main.ts <mode>` with the mode's arguments as JSON
 * in BENCH_LOAD_ARGS (bench/proc.ts spawns it; bench/load/args.ts types each mode's arguments, and
 * bench/load/modes/<mode>.ts says what the mode measures). It runs apart from the server under test
 * and the runner, talks to them over real sockets only, prints progress on stderr and its result as
 * one JSON line on stdout. Exit status: 0 with a result, 1 when the mode failed, 2 for an unknown
 * mode or a missing or bad argument.
 */
import { type LoadArgs, LoadArgsError, parseLoadArgs } from './args.js';
import { runAppend } from './modes/append.js';
import { runFanout } from './modes/fanout.js';
import { runHold } from './modes/hold.js';
import { runHttp } from './modes/http.js';
import { runPaced } from './modes/paced.js';
import { runRawWrites } from './modes/raw-writes.js';
import { runSoak } from './modes/soak.js';
import { runStream } from './modes/stream.js';
import { runUsage } from './modes/usage.js';
import { log, printLine } from './output.js';

function run(args: LoadArgs): Promise<unknown> {
  switch (args.mode) {
    case 'http':
      return runHttp(args);
    case 'raw-writes':
      return runRawWrites(args);
    case 'fanout':
      return runFanout(args);
    case 'paced':
      return runPaced(args);
    case 'stream':
      return runStream(args);
    case 'usage':
      return runUsage(args);
    case 'append':
      return runAppend(args);
    case 'hold':
      return runHold(args);
    case 'soak':
      return runSoak(args);
  }
}

function parsedArgs(): LoadArgs {
  try {
    return parseLoadArgs(process.argv[2], process.env.BENCH_LOAD_ARGS);
  } catch (error) {
    if (!(error instanceof LoadArgsError)) throw error;
    log(error.message);
    process.exit(2);
  }
}

run(parsedArgs()).then(
  (result) => {
    printLine(result);
    process.exit(0);
  },
  (error) => {
    log((error as Error).stack ?? String(error));
    process.exit(1);
  },
);
