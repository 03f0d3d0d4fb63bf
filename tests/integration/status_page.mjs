// Drives headless Chromium at predrop-server's status page (status_page.sh starts the server and
// a playing client first) and checks what an operator would see:
//   1. the page loads (200, text/html) without a console error, an uncaught exception or a
//      failed request;
//   2. a playing session is listed in the sessions table and has a plot;
//   3. its plot updates: the canvas's data-last-stage and data-points grow while we watch;
// then writes a screenshot to OUTDIR/status_page.png.
//   node status_page.mjs BASE_URL OUTDIR
// Polls the page's state (no fixed sleeps as the verdict); every wait has a deadline.

import fs from 'node:fs';
import path from 'node:path';

import { fail, launchChromium, waitFor, watchProblems } from './cdp_pipe.mjs';

const [base, outdir] = process.argv.slice(2);
if (!base || !outdir) {
  console.error('usage: node status_page.mjs BASE_URL OUTDIR');
  process.exit(2);
}
const url = `${base}/status?interval_ms=250`;
let problems = [];

const browser = await launchChromium({
  args: ['--window-size=1280,1000', '--hide-scrollbars'],
  logFile: path.join(outdir, 'browser.log'),
});
let status = 1;
try {
  const page = await browser.newPage('about:blank');
  // Everything the page reports as wrong, from before its first byte.
  problems = watchProblems(page, { console: ['error', 'assert', 'warning'], log: true, network: true });
  let document = null;
  page.on('Network.responseReceived', (p) => {
    if (p.type === 'Document') document = p.response;
  });
  await Promise.all([page.send('Log.enable'), page.send('Network.enable')]);
  await page.goto(url);

  if (!document || document.status !== 200) fail(`page answered ${document?.status}`);
  if (!/^text\/html/.test(document.mimeType)) fail(`page is ${document.mimeType}`);
  const title = await page.evaluate('document.title');
  if (title !== 'predrop status') fail(`title is ${JSON.stringify(title)}`);

  // A playing session listed, and its plot with points.
  const row = await waitFor(page, 'a playing session in the table', `(() => {
    for (const tr of document.querySelectorAll('#sessions tbody tr')) {
      const cells = [...tr.children].map((td) => td.textContent);
      if (cells[cells.length - 1] === 'playing' && cells[1] === 'sample') return cells;
    }
    return null;
  })()`, 20000);
  const number = row[0];
  console.log(`session ${number} listed: ${row.join(' | ')}`);
  const canvas = `document.querySelector('canvas[data-session="${number}"]')`;
  const first = await waitFor(page, 'the plot of that session with points', `(() => {
    const c = ${canvas};
    return c && Number(c.dataset.points) >= 2 ? { points: Number(c.dataset.points),
      stage: Number(c.dataset.lastStage), draws: Number(c.dataset.draws) } : null;
  })()`, 20000);
  console.log(`plot: ${first.points} points, last stage ${first.stage}, ${first.draws} draws`);
  // It updates: four more blocks drawn while we watch (quarter-second blocks).
  const later = await waitFor(page, 'the plot to gain blocks', `(() => {
    const c = ${canvas};
    const stage = Number(c.dataset.lastStage);
    return stage >= ${first.stage + 4} && Number(c.dataset.points) > ${first.points}
      ? { points: Number(c.dataset.points), stage, draws: Number(c.dataset.draws) } : null;
  })()`, 20000);
  console.log(`plot: ${later.points} points, last stage ${later.stage}, ${later.draws} draws`);
  // The streams table knows the stream and its session; the page saw no failure.
  const streams = await page.evaluate(
    `[...document.querySelectorAll('#streams tbody td')].map((td) => td.textContent)`);
  if (streams[0] !== 'sample' || Number(streams[2]) < 1) fail(`streams table: ${streams}`);
  const pageError = await page.evaluate('document.body.dataset.error');
  if (pageError) fail(`the page reports: ${pageError}`);
  // Something was drawn: the canvas is not blank.
  const inked = await page.evaluate(`(() => {
    const c = ${canvas};
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) n += d[i] > 0 ? 1 : 0;
    return n;
  })()`);
  if (inked < 500) fail(`the plot has only ${inked} drawn pixels`);

  const shot = await page.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
  const file = path.join(outdir, 'status_page.png');
  fs.writeFileSync(file, Buffer.from(shot.data, 'base64'));
  console.log(`screenshot: ${file}`);
  if (problems.length) fail(`the page reported problems:\n  ${problems.join('\n  ')}`);
  console.log('status page: ok');
  status = 0;
} catch (e) {
  console.error(`status page: FAILED: ${e.message}`);
  if (problems.length) console.error(`  ${problems.join('\n  ')}`);
} finally {
  await browser.close();
}
process.exit(status);
