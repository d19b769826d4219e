import { Command, Flags, Errors } from '@oclif/core';
import { EvermeError, toEvermeError } from '../core/errors.js';
import { dataDirFlag } from './flags.js';
import { reportError, successEnvelope, writeStdout } from './output.js';

/** oclif's wrapping of an error thrown by a flag's own parser: `Parsing --flag \n\t<message>\nSee more help…`. */
const FLAG_PARSE_WRAPPING = /^Parsing --[\w-]+ \n\t([\s\S]*?)(?:\nSee more help with --help)?$/;

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
    'data-dir': dataDirFlag,
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
      // A shared flag's parser (src/cli/flags.ts) threw this error: say it in its own words.
      const wrapped = FLAG_PARSE_WRAPPING.exec(mapped.message);
      if (mapped.type === 'invalid_args' && wrapped?.[1] !== undefined) {
        mapped = new EvermeError('invalid_args', wrapped[1], {
          code: mapped.code,
          hint: mapped.hint ?? `See \`everme ${this.id ?? ''} --help\`.`.replace('  ', ' '),
          detail: mapped.detail,
        });
      }
    }
    if (mapped.type === 'internal' && process.env.EVERME_DEBUG) process.stderr.write(`${err.stack ?? err}\n`);
    process.exitCode = reportError(mapped, this.jsonMode);
  }
}
