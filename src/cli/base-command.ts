import { Command, Flags, Errors } from '@oclif/core';
import { EvermeError, toEvermeError } from '../core/errors.js';
import { reportError, successEnvelope, writeStdout } from './output.js';

function isParseError(err: unknown): err is Error {
  // oclif's parser errors (unknown flag, missing arg, bad option) carry the `parse` context; a flag
  // whose own parser rejected the value (`--concurrency 0`) arrives as a plain "Parsing --flag" Error.
  if (err instanceof Errors.CLIError && typeof (err as { parse?: unknown }).parse === 'object') return true;
  return err instanceof Error && !(err instanceof EvermeError) && /^Parsing --[\w-]+/.test(err.message);
}

/**
 * Every command: `--data-dir`, `--json`, one place that turns failures into the error envelope and
 * an exit code, and Ctrl-C turned into an abort signal the engine honours.
 */
export abstract class EvermeCommand extends Command {
  static override baseFlags = {
    'data-dir': Flags.string({
      description: 'MiniMax Code data directory (default: $MINIMAX_DATA_DIR, $MAVIS_DATA_DIR, ~/.minimax)',
      helpGroup: 'GLOBAL',
    }),
    json: Flags.boolean({
      description: 'Print exactly one JSON envelope on stdout',
      helpGroup: 'GLOBAL',
      default: false,
    }),
  };

  protected jsonMode = false;
  protected readonly abort = new AbortController();
  private readonly onSigint = (): void => {
    if (this.abort.signal.aborted) process.exit(130);
    this.abort.abort();
  };

  protected override async init(): Promise<void> {
    this.jsonMode = this.argv.includes('--json');
    process.on('SIGINT', this.onSigint);
    process.on('SIGTERM', this.onSigint);
    await super.init();
  }

  protected override async finally(err: Error | undefined): Promise<void> {
    process.off('SIGINT', this.onSigint);
    process.off('SIGTERM', this.onSigint);
    await super.finally(err);
  }

  /** Prints the result: the envelope with --json, otherwise the human rendering. */
  protected emit(data: unknown, renderText: () => string, meta?: Record<string, unknown>): void {
    if (this.jsonMode) writeStdout(successEnvelope(data, meta));
    else {
      const text = renderText();
      if (text) writeStdout(text);
    }
  }

  protected override async catch(err: Error & { exitCode?: number }): Promise<void> {
    if (err instanceof Errors.ExitError) throw err;
    let mapped: EvermeError;
    if (isParseError(err)) {
      const message = err.message
        .replace(/\u001b\[[0-9;]*m/g, '')
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line && !line.startsWith('See more help') && !/^The following errors? occurred:?$/.test(line))
        .join(': ');
      mapped = new EvermeError('invalid_args', message, {
        hint: `See \`everme ${this.id ?? ''} --help\`.`.replace('  ', ' '),
      });
    } else {
      mapped = toEvermeError(err);
    }
    if (mapped.type === 'internal' && process.env.EVERME_DEBUG) process.stderr.write(`${err.stack ?? err}\n`);
    process.exitCode = reportError(mapped, this.jsonMode);
  }
}
