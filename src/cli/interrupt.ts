/**
 * Ctrl-C (or SIGTERM) aborts `abort`, which the engine honours (it commits what it holds and stops);
 * a second one exits at once with 130. Returns what removes the handlers.
 */
export function abortOnInterrupt(abort: AbortController): () => void {
  const onSignal = (): void => {
    if (abort.signal.aborted) process.exit(130);
    abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}
