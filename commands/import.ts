import { Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { concurrencyFlag, namingFlag, sinceFlag, sinkFlag } from '../src/cli/flags.js';
import { runImport } from '../src/cli/import-flow.js';
import { renderImportExport } from '../src/cli/render-import-export.js';
import { renderRunSummary } from '../src/cli/render-run.js';
import { finishRun } from '../src/cli/run-output.js';
import type { RunSummary } from '../src/engine/run-pipeline.js';
import type { ImportExportSummary } from '../src/export/import-export.js';

export default class Import extends EvermeCommand<typeof Import> {
  static override summary = 'Import MiniMax Code history since a date (the cold start)';
  static override description =
    'Reads every session created on or after --since, converts it to agent memory, and delivers what is not delivered yet. Re-running it is a no-op. With --from-export, loads a jsonl file written by `everme export` into the local store instead.';
  static override examples = [
    '<%= config.bin %> import --since 2026-09-01',
    '<%= config.bin %> import --since 2026-09-01 --sink everme --json',
    '<%= config.bin %> import --from-export everme-export.jsonl',
  ];
  static override flags = {
    since: sinceFlag('first day to import (YYYY-MM-DD, UTC); required unless --from-export'),
    'from-export': namingFlag('load a jsonl file written by `everme export` into the local store (once), instead of reading sessions', 'Pass the .jsonl file `everme export` wrote.'),
    sink: sinkFlag('where memories go (default: everme when an API key is configured, else local)'),
    concurrency: concurrencyFlag,
    'dry-run': Flags.boolean({ description: 'read and convert, but touch neither the network nor the state', default: false }),
    again: Flags.boolean({ description: 'with --from-export: load the file even if it was loaded before (nothing the store holds is added twice)', default: false }),
  };

  async run(): Promise<RunSummary | ImportExportSummary> {
    const { flags } = this;
    const request = { since: flags.since, fromExport: flags['from-export'], sink: flags.sink, concurrency: flags.concurrency, dryRun: flags['dry-run'], again: flags.again };
    const outcome = await runImport(request, this.flowContext());
    if (outcome.kind === 'export') return this.result(outcome.loaded, () => renderImportExport(outcome.loaded));
    return this.result(finishRun(outcome.summary, this.jsonMode), () => renderRunSummary(outcome.summary));
  }
}
