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
];

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: \`apt-get install -y chromium\` (.ci/run installs it)`);
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}
