import { Command, Errors, type Interfaces } from '@oclif/core';
import type { Settings } from '../config/settings.js';
import { commandSettings } from './command-settings.js';
import { EvermeError, toEvermeError } from '../core/errors.js';
import { requireDataDir, resolveDataDir } from '../config/data-dir.js';
import { dataDirFlag, jsonFlag } from './flags.js';
import { abortOnInterrupt } from './interrupt.js';
import { guardStdout, reportFailure, successEnvelope, writeJson, writeStderr, writeStdout, type SuccessEnvelope } from './output.js';

/** oclif's wrapping of an error thrown by a flag's parser: `Parsing --flag \n\t<message>\nSee more help…`. */
const FLAG_PARSE_WRAPPING = /^Parsing (--[\w-]+) \n\t([\s\S]*?)(?:\nSee more help with --help)?$/;

/** oclif's own words for a value its integer parser refused (`--offset -1`). */
const OCLIF_EXPECTED = /^Expected (.+?) but received: ([\s\S]*)$/;

/**
 * A value oclif's own flag parser (`Flags.integer`) refused, said as the shared flags say theirs
 * (`--offset must be …, got "-1"`), without oclif's `Parsing --flag` prefix.
 */
function refusedValue(message: string): string | undefined {
  const wrapped = FLAG_PARSE_WRAPPING.exec(message);
  if (!wrapped) return undefined;
  const expected = OCLIF_EXPECTED.exec(wrapped[2]!);
  return expected ? `${wrapped[1]} must be ${expected[1]}, got "${expected[2]}"` : `${wrapped[1]}: ${wrapped[2]}`;
}

/**
 * Plain CLIErrors oclif's parser threw (a flag given twice, a flag without its value): they carry no
 * `parse` context, so they are known by where they were thrown (`init`'s parse).
 */
const thrownByParser = new WeakSet<Error>();

function isParseError(err: unknown): err is Error {
  // oclif's parser errors (unknown flag, missing arg, bad option) carry the `parse` context; a flag
  // whose own parser rejected the value (`--concurrency 0`) arrives as a plain "Parsing --flag" Error.
  if (err instanceof Errors.CLIError && typeof (err as { parse?: unknown }).parse === 'object') return true;
  if (err instanceof Errors.CLIError && thrownByParser.has(err)) return true;
  return err instanceof Error && !(err instanceof EvermeError) && /^Parsing --[\w-]+/.test(err.message);
}

/**
 * What a command's flow (`src/cli/*-flow.ts`) is given by its command: the settings, resolved only
 * when the flow asks (after it checked the flags, so a usage mistake is invalid_args wherever it
 * runs), whether --json is on, and the Ctrl-C signal.
 */
export interface FlowContext {
  settings: () => Settings;
  json: boolean;
  signal: AbortSignal;
}

/** A command's parsed flags (its own and the base ones) and args, typed from its static definitions. */
export type CommandFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof EvermeCommand)['baseFlags'] & T['flags']>;
export type CommandArgs<T extends typeof Command> = Interfaces.InferredArgs<T['args']>;

/**
 * Every command: `--data-dir`, `--json`, flags parsed once (`this.flags`, `this.args`), the data dir
 * and its settings resolved once (`dataDir()`, `settings()`), one place that turns failures into the
 * error envelope and an exit code, and Ctrl-C turned into an abort signal the engine honours.
 *
 * oclif owns `--json` (`enableJsonFlag`): `run()` returns the data, oclif prints it through
 * `toSuccessJson` (this project's envelope, printed by `logJson` as one line); a failure goes to
 * `catch`, which prints it as `sync-entry.ts` does (`reportFailure`). In text mode `run()` renders
 * the data itself (`result`).
 */
export abstract class EvermeCommand<T extends typeof Command = typeof Command> extends Command {
  static override enableJsonFlag = true;
  static override baseFlags = {
    'data-dir': dataDirFlag,
    // Our own wording for the flag oclif adds with enableJsonFlag (baseFlags override its default).
    json: jsonFlag,
  };

  protected readonly abort = new AbortController();
  protected flags!: CommandFlags<T>;
  protected args!: CommandArgs<T>;
  /** Every positional argument, in order (what a command with `strict = false` takes as a list). */
  protected positionals!: string[];
  private meta?: Record<string, unknown>;
  private resolved?: { dataDir: string; settings?: Settings };
  private stopWatchingInterrupts: (() => void) | undefined;

  /** `--json` was given: stdout gets exactly one envelope and nothing else. */
  protected get jsonMode(): boolean {
    return this.jsonEnabled();
  }

  protected override async init(): Promise<void> {
    this.stopWatchingInterrupts = abortOnInterrupt(this.abort);
    guardStdout();
    await super.init();
    // Parsed here, once, for every command (oclif's base-command pattern); a usage mistake reaches
    // `catch` like any other failure.
    const ctor = this.ctor as typeof EvermeCommand;
    const { flags, args, argv } = await this.parse({ flags: ctor.flags, baseFlags: EvermeCommand.baseFlags, args: ctor.args, strict: ctor.strict, enableJsonFlag: ctor.enableJsonFlag }).catch(
      (err: unknown) => {
        if (err instanceof Error) thrownByParser.add(err);
        throw err;
      },
    );
    this.flags = flags as CommandFlags<T>;
    this.args = args as CommandArgs<T>;
    this.positionals = argv.filter((a): a is string => typeof a === 'string');
  }

  /**
   * The MiniMax data directory (`--data-dir`, then the environment), resolved once. It must exist
   * unless `mayBeMissing` (install writes into it): a missing one is the same `io`/`data_dir_missing`
   * error, naming the path, in every command.
   */
  protected dataDir(opts: { mayBeMissing?: boolean } = {}): string {
    this.resolved ??= { dataDir: resolveDataDir(this.flags['data-dir']) };
    return opts.mayBeMissing ? this.resolved.dataDir : requireDataDir(this.resolved.dataDir);
  }

  /** For a flow in `src/cli/`: see `FlowContext`. */
  protected flowContext(): FlowContext {
    return { settings: () => this.settings(), json: this.jsonMode, signal: this.abort.signal };
  }

  /** The settings (flags, environment, `<data>/everme.env`) of `dataDir()`, read once. */
  protected settings(opts: { mayBeMissing?: boolean } = {}): Settings {
    const dataDir = this.dataDir(opts);
    return (this.resolved!.settings ??= commandSettings(dataDir));
  }

  protected override async finally(err: Error | undefined): Promise<void> {
    this.stopWatchingInterrupts?.();
    await super.finally(err);
  }

  /**
   * What `run()` returns: the data (oclif turns it into the envelope with --json, carrying `meta`);
   * in text mode its human rendering goes to stdout now.
   */
  protected result<T>(data: T, renderText: () => string, meta?: Record<string, unknown>): T {
    if (this.jsonMode) this.meta = meta;
    else {
      const text = renderText();
      if (text) writeStdout(text);
    }
    return data;
  }

  /**
   * A failure that has a report (install, uninstall, status): in text mode the report goes to
   * stderr ahead of the error, so stdout stays empty; with --json it travels in the error's detail.
   */
  protected failWithReport(failure: EvermeError, renderText: () => string): never {
    if (!this.jsonMode) writeStderr(renderText());
    throw failure;
  }

  /**
   * install and uninstall: their report, then its warnings on stderr (text mode); or, when the
   * outcome is a failure, the report and warnings ahead of the error.
   */
  protected resultWithWarnings<T>(data: T, failure: EvermeError | undefined, renderText: () => string, warnings: string[]): T {
    if (failure) return this.failWithReport(failure, () => [renderText(), ...warnings].join('\n'));
    const shown = this.result(data, renderText);
    if (!this.jsonMode) for (const line of warnings) writeStderr(line);
    return shown;
  }

  protected override toSuccessJson(result: unknown): SuccessEnvelope {
    return successEnvelope(result, this.meta);
  }

  /** One line, redacted like everything else on stdout (oclif's default pretty-prints with colour). */
  protected override logJson(json: unknown): void {
    writeJson(json);
  }

  protected override catch(err: Error & { exitCode?: number }): Promise<void> {
    if (err instanceof Errors.ExitError) throw err;
    process.exitCode = reportFailure(this.toEvermeError(err), this.jsonMode, err);
    return Promise.resolve();
  }

  /** Any failure in the taxonomy: oclif's parse errors become invalid_args with a pointer to --help. */
  private toEvermeError(err: Error): EvermeError {
    const help = `See \`everme ${this.id ?? ''} --help\`.`.replace('  ', ' ');
    if (isParseError(err)) {
      const plain = err.message.replace(/\u001b\[[0-9;]*m/g, '');
      const refused = refusedValue(plain);
      if (refused !== undefined) return new EvermeError('invalid_args', refused, { hint: help });
      const message = plain
        .split('\n')
        // oclif lays lists out in columns (`query  what to look for`): one line of single spaces.
        .map((line) => line.trim().replace(/\s{2,}/g, ' '))
        .filter((line) => line && !line.startsWith('See more help') && !/^The following errors? occurred:?$/.test(line))
        .reduce((joined, line) => (joined === '' ? line : `${joined}${joined.endsWith(':') ? ' ' : ': '}${line}`), '');
      return new EvermeError('invalid_args', message, { hint: help });
    }
    const mapped = toEvermeError(err);
    // A shared flag's parser (src/cli/flags.ts) threw this error: say it in its own words.
    const wrapped = FLAG_PARSE_WRAPPING.exec(mapped.message);
    if (mapped.type === 'invalid_args' && wrapped?.[2] !== undefined) {
      return new EvermeError('invalid_args', wrapped[2], { code: mapped.code, hint: mapped.hint ?? help, detail: mapped.detail });
    }
    return mapped;
  }
}
