// Entry point: reads the environment, builds the app, listens, and shuts down cleanly on signals
// (`start` in start.ts, which the benchmark's entry without deviations shares).
// Exit codes: 0 after a clean shutdown, 1 when shutdown fails or a second signal cuts it short,
// 2 on a configuration error (its message names the variable).
import { start } from './start.js';

await start();
