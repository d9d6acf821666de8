import { helpText } from './cli/help-text';
import { parseCli } from './cli/parse-args';
import { createLogger } from './log';
import { NonLoopbackRefusedError, startBridge, type RunningBridge } from './server';
import { bridgeVersion } from './version';

/** Exit codes: 0 done, 1 could not start, 2 bad usage. */
async function main(): Promise<number | undefined> {
  const command = parseCli(process.argv.slice(2), process.env);
  switch (command.kind) {
    case 'help':
      process.stdout.write(helpText);
      return 0;
    case 'version':
      process.stdout.write(`${bridgeVersion}\n`);
      return 0;
    case 'error':
      process.stderr.write(`faucet-bridge: ${command.message}\nRun faucet-bridge --help for usage.\n`);
      return 2;
  }
  const log = createLogger();
  // Handlers go in before the "listening" line, so a signal sent as soon as it appears is caught.
  let bridge: RunningBridge | undefined;
  let stopping = false;
  const stop = (signal: string) => {
    // A second Ctrl+C means "now": skip the grace period.
    if (stopping) process.exit(1);
    stopping = true;
    log.info('stopping', { signal });
    void (bridge?.close() ?? Promise.resolve()).then(() => {
      log.info('stopped');
      process.exit(0);
    });
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));

  try {
    bridge = await startBridge({ ...command.options, log });
  } catch (error) {
    const refused = error instanceof NonLoopbackRefusedError;
    const message = refused ? error.message : `could not start: ${(error as { code?: string }).code ?? (error as Error).message}`;
    process.stderr.write(`faucet-bridge: ${message}\n`);
    return refused ? 2 : 1;
  }
  process.stdout.write(`faucet-bridge ${bridgeVersion} listening on ${bridge.url}\n`);
  return undefined;
}

main().then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`faucet-bridge: unexpected failure (${(error as Error)?.name ?? 'unknown'})\n`);
    process.exitCode = 1;
  },
);
