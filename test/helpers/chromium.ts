// Debian's Chromium driven by playwright-core (npm packages cannot download browsers here).
// `.ci/run` installs it; elsewhere the browser suites skip and say how to get it (under CI
// they fail instead).
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium } from 'playwright-core';
import { requireTool } from './tools.js';

const EXECUTABLE = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/** Whether a Chromium is installed to run the browser suites with; under CI it must be. */
export const hasChromium = requireTool(
  `Chromium (${EXECUTABLE})`,
  existsSync(EXECUTABLE),
  'Debian/Ubuntu: apt-get install chromium, or point CHROMIUM_PATH at one; .ci/run installs it',
);

/** Where the browser suites save their screenshots (next to vitest's report). */
export const SCREENSHOTS = fileURLToPath(new URL('../../test-results/browser/', import.meta.url));

/** A headless Chromium, with the flags this machine needs (no sandbox as root, no network). */
export function launchChromium(): Promise<Browser> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: EXECUTABLE,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
