/**
 * Run by `npm test` before the test files: starts the host once, so that a
 * host that cannot start is one failure naming its command, in a few seconds,
 * instead of every test that needs it failing on its own.
 */

import { hostCommandLine, startHost } from './helpers';

async function main(): Promise<void> {
  try {
    const host = await startHost();
    const code = await host.close();
    if (code !== 0) {
      const shown = hostCommandLine();
      throw new Error(`the host ${shown} exited with ${code} on shutdown: ${host.stderr()}`);
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`oma-host tests not run: ${message}\n`);
    process.exitCode = 1;
  }
}

void main();
