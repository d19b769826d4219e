/**
 * Warning codes are a contract: the report, the tests and users' scripts rely on them.
 * A warning names where (file and line), never what: no content ever goes into a sample.
 */
export const WARNING_CODES = [
  'invalid_manifest',
  'invalid_json',
  'invalid_record',
  'incomplete_tail',
  'missing_snapshot',
  'tool_call_missing_id',
  'tool_call_missing_name',
  'tool_call_invalid_arguments',
  'tool_result_missing_id',
  'tool_result_of_rejected_call',
  'duplicate_tool_call_id',
  'unmatched_tool_result',
  'oversized_unit',
  'history_rewritten',
  'duplicate_session_dir',
  'gateway_response_invalid',
  'oversized_line',
  'symlinked_file',
  'unreadable_dir',
] as const;

export type WarningCode = (typeof WARNING_CODES)[number];

export interface WarningLocation {
  /** Path relative to the session directory (e.g. `messages.jsonl`, `snapshots/g…jsonl`). */
  file: string;
  /** 1-based line number; 0 when the warning is about the file as a whole. */
  line: number;
}

export interface WarningEntry {
  code: WarningCode;
  count: number;
  samples: WarningLocation[];
}

export const MAX_WARNING_SAMPLES = 5;

export class WarningCollector {
  private readonly byCode = new Map<WarningCode, WarningEntry>();

  add(code: WarningCode, location?: WarningLocation, count = 1): void {
    let entry = this.byCode.get(code);
    if (!entry) {
      entry = { code, count: 0, samples: [] };
      this.byCode.set(code, entry);
    }
    entry.count += count;
    if (location && entry.samples.length < MAX_WARNING_SAMPLES) entry.samples.push({ ...location });
  }

  merge(entries: Iterable<WarningEntry>): void {
    for (const entry of entries) {
      this.add(entry.code, undefined, entry.count);
      const target = this.byCode.get(entry.code)!;
      for (const sample of entry.samples) {
        if (target.samples.length >= MAX_WARNING_SAMPLES) break;
        target.samples.push({ ...sample });
      }
    }
  }

  get size(): number {
    return this.byCode.size;
  }

  /** Entries in the contract's code order, so output is stable. */
  entries(): WarningEntry[] {
    return WARNING_CODES.flatMap((code) => {
      const entry = this.byCode.get(code);
      return entry ? [{ code, count: entry.count, samples: entry.samples.map((s) => ({ ...s })) }] : [];
    });
  }
}

/** Sums by code, keyed in the contract's code order so printed summaries are stable. */
export function totalsByCode(entries: Iterable<WarningEntry>): Partial<Record<WarningCode, number>> {
  const sums = new Map<WarningCode, number>();
  for (const entry of entries) sums.set(entry.code, (sums.get(entry.code) ?? 0) + entry.count);
  const totals: Partial<Record<WarningCode, number>> = {};
  for (const code of WARNING_CODES) {
    const sum = sums.get(code);
    if (sum !== undefined) totals[code] = sum;
  }
  return totals;
}
