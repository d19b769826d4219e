/**
 * Headless Chromium for the viewer's end-to-end tests: Debian's `chromium` package driven by
 * playwright-core (which downloads no browser of its own). Playwright starts it with a fresh, empty
 * profile of its own (removed on close); the flags keep Chromium from reaching out by itself
 * (updates, sync, safe browsing), so the only traffic is what the page under test makes.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--disable-extensions',
  '--no-first-run',
  '--no-default-browser-check',
  // Chromium is no node process, so the outbound-socket guard cannot hold it: every request to a
  // host other than loopback (which Chromium never sends through a proxy) goes to a dead loopback
  // proxy instead of leaving the machine.
  '--proxy-server=http://127.0.0.1:9',
];

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: \`apt-get install -y chromium\` (.ci/run installs it)`);
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}
