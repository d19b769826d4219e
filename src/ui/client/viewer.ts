/**
 * The viewer's only script (served from the viewer's own origin; the CSP allows nothing else). The
 * pages work without it; it adds search-as-you-type and brings a linked message into view.
 */

/** Quiet time after the last keystroke before a search is sent. */
const DEBOUNCE_MS = 200;

function searchAsYouType(form: HTMLFormElement): void {
  let timer: number | undefined;
  let inFlight: AbortController | undefined;
  // What the results on the page answer: the box's `change` (fired when it loses focus, say to a
  // result's checkbox) must not reload the same results and clear what was ticked in them.
  let shown = new URLSearchParams(location.search);
  // Both under the launch's secret prefix, as the page wrote them: the script names no path itself.
  const page = form.getAttribute('action') ?? '';
  const results = form.dataset.results ?? '';

  const run = async (): Promise<void> => {
    const fired = performance.now();
    const params = new URLSearchParams();
    for (const [key, value] of new FormData(form)) if (typeof value === 'string' && value !== '') params.set(key, value);
    if (params.toString() === shown.toString()) return;
    const previous = shown;
    shown = params;
    inFlight?.abort();
    const controller = new AbortController();
    inFlight = controller;
    try {
      const response = await fetch(`${results}?${params.toString()}`, { signal: controller.signal, credentials: 'same-origin' });
      if (!response.ok) {
        shown = previous;
        return;
      }
      const markup = await response.text();
      if (controller.signal.aborted) return;
      const current = document.getElementById('results');
      if (!current) return;
      const next = document.createElement('template');
      next.innerHTML = markup;
      const replacement = next.content.firstElementChild;
      if (!(replacement instanceof HTMLElement)) return;
      current.replaceWith(replacement);
      // How long the results took to reach the page after the debounce fired (read by the bench).
      replacement.dataset.ms = (performance.now() - fired).toFixed(1);
      history.replaceState(null, '', `${page}?${params.toString()}`);
    } catch (err) {
      if (!(err instanceof DOMException && err.name === 'AbortError')) {
        shown = previous;
        throw err;
      }
    }
  };

  const schedule = (): void => {
    if (timer !== undefined) window.clearTimeout(timer);
    timer = window.setTimeout(() => {
      timer = undefined;
      void run();
    }, DEBOUNCE_MS);
  };
  form.addEventListener('input', schedule);
  form.addEventListener('change', schedule);
}

function revealTarget(): void {
  const target = document.querySelector<HTMLElement>('.message.target');
  if (!target) return;
  target.scrollIntoView({ block: 'center' });
  target.focus({ preventScroll: true });
}

function start(): void {
  const form = document.getElementById('search-form');
  if (form instanceof HTMLFormElement) searchAsYouType(form);
  revealTarget();
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
