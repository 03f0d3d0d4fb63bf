// The harness the headless-Chromium tests share (webrtc_chromium.mjs, status_page.mjs):
//   launchChromium   Debian's Chromium over its DevTools pipe. The pipe driver itself lives once
//                    in bench/testbed/webrtc-peer/chromium.mjs, where the bed's calls use it
//                    too; the tests reach it only through this module.
//   waitFor          polls a page expression until it is truthy, with a deadline (never a fixed
//                    sleep as the verdict).
//   watchProblems    collects what the page reports as wrong: uncaught exceptions and console
//                    messages of the given levels; with `log`, Log domain errors and warnings;
//                    with `network`, failed requests and HTTP >= 400. Install it before goto().
//   fail             throws the test's failure.

import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const { launchChromium } = await import(
  path.join(here, '../../bench/testbed/webrtc-peer/chromium.mjs'));

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function fail(message) {
  throw new Error(message);
}

export async function waitFor(page, what, expr, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await page.evaluate(expr).catch(() => null);
    if (v) return v;
    if (Date.now() > deadline) fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

export function watchProblems(page, { console: levels = ['error'], log = false, network = false } = {}) {
  const problems = [];
  page.on('Runtime.exceptionThrown', (p) => {
    problems.push(`exception: ${p.exceptionDetails.exception?.description || p.exceptionDetails.text}`);
  });
  page.on('Runtime.consoleAPICalled', (p) => {
    if (levels.includes(p.type)) {
      problems.push(`console.${p.type}: ${p.args.map((a) => a.value ?? a.description).join(' ')}`);
    }
  });
  if (log) {
    page.on('Log.entryAdded', (p) => {
      if (p.entry.level === 'error' || p.entry.level === 'warning') {
        problems.push(`log ${p.entry.level} (${p.entry.source}): ${p.entry.text} ${p.entry.url || ''}`);
      }
    });
  }
  if (network) {
    page.on('Network.responseReceived', (p) => {
      if (p.response.status >= 400) problems.push(`HTTP ${p.response.status} for ${p.response.url}`);
    });
    page.on('Network.loadingFailed', (p) => problems.push(`request failed: ${p.errorText}`));
  }
  return problems;
}
