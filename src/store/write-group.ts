/**
 * How many writes from the head of the writer thread's queue go into its next transaction: as many
 * as wait, up to `maxWrites`, and no more bytes than `maxBytes` unless the first write alone holds
 * more (it still commits, alone).
 */
export function groupLength(queue: ReadonlyArray<{ readonly bytes: number }>, maxWrites: number, maxBytes: number): number {
  let length = 0;
  let bytes = 0;
  while (length < queue.length && length < maxWrites) {
    const next = queue[length]!.bytes;
    if (length > 0 && bytes + next > maxBytes) break;
    bytes += next;
    length++;
  }
  return length;
}
