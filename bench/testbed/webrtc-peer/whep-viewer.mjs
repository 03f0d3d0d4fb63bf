#!/usr/bin/env node
// The browser side of whep-viewer.sh (issue 22): a headless Chromium of its own, in the namespace
// this process runs in, opens predrop-server's WHEP player page (the server's own page, as in
// tests/integration/webrtc_chromium) and plays until --seconds have passed or the bed stops it
// (SIGTERM/SIGINT/SIGHUP). Every whole second of the case clock (DIR/t0) it reads the page:
//
//   DIR/whep-viewer-I[-K].csv   per second: the video's getStats() counters (cumulative) and
//                               the jitter buffer's mean delay over the second; and, per second
//                               of play the page measured (window.predrop.quality), its decoded,
//                               dropped, freezes, freeze ms, P and the RTP span it played
//   DIR/whep-viewer-I[-K].json  set-up times, the session, the last counters
//
//   whep-viewer.mjs --flow I --listen IP --peer IP --out DIR --seconds N --url PAGE_URL
// Exit 0 when it connected and decoded.

import fs from 'node:fs';
import path from 'node:path';
import { launchChromium } from './chromium.mjs';

const o = { flow: null, listen: null, peer: null, out: null, seconds: 0, url: null };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) {
  const k = argv[i].replace(/^--/, '');
  if (!(k in o) || argv[i + 1] === undefined) {
    console.error('usage: whep-viewer.mjs --flow I --listen IP --peer IP --out DIR --seconds N --url URL');
    process.exit(2);
  }
  o[k] = k === 'flow' || k === 'seconds' ? Number(argv[i + 1]) : argv[i + 1];
}
if (!(o.flow >= 0) || !o.out || !(o.seconds > 0) || !o.url) {
  console.error('whep-viewer.mjs: --flow, --out, --seconds and --url are required');
  process.exit(2);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const startedAt = Date.now();
const deadline = startedAt + o.seconds * 1000;
const log = (...a) => console.error(`[viewer ${o.flow} ${new Date().toISOString().slice(11, 23)}]`, ...a);
const t0File = path.join(o.out, 't0');
const t0 = fs.existsSync(t0File) ? parseFloat(fs.readFileSync(t0File, 'utf8')) * 1000 : startedAt;
const caseS = (ms) => ((ms - t0) / 1000).toFixed(3);
// A flow that pauses and resumes is two segments: K counts them.
let base = path.join(o.out, `whep-viewer-${o.flow}`);
for (let k = 1; fs.existsSync(`${base}.csv`); k++) base = path.join(o.out, `whep-viewer-${o.flow}-${k}`);

let stop = null;
const stopped = new Promise((resolve) => { stop = resolve; });
let stopRequested = false;
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => { stopRequested = true; stop(sig); });
const until = (p) => Promise.race([p, stopped.then(() => { throw new Error('stopped'); })]);

// The video's counters and its jitter buffer, from the page's own peer connection.
const SAMPLE = `(async () => {
  const s = await window.predrop.stats();
  let jb = 0, jbn = 0;
  (await window.predrop.pc.getStats()).forEach((r) => {
    if (r.type === 'inbound-rtp' && r.kind === 'video') { jb = r.jitterBufferDelay || 0; jbn = r.jitterBufferEmittedCount || 0; }
  });
  return { ...s, jb, jbn, timeOrigin: performance.timeOrigin };
})()`;
const COUNTERS = ['framesDecoded', 'framesDropped', 'freezeCount', 'totalFreezesDuration', 'packetsReceived',
  'packetsLost', 'nackCount', 'pliCount', 'retransmittedPacketsReceived'];
const QUALITY = ['frames_decoded', 'frames_dropped', 'freezes', 'freeze_ms', 'p', 'rtp_from', 'rtp_to'];

// A failed navigation leaves chromium.mjs's wait for its load event behind: log, do not die.
process.on('unhandledRejection', (err) => log(`ignored: ${err?.message || err}`));

let browser = null;
async function main() {
  const meta = { flow: o.flow, url: o.url, started: (startedAt - t0) / 1000, timings: {} };
  const mark = (what) => { meta.timings[what] = (Date.now() - startedAt) / 1000; };
  // The server starts at the same moment in the sender namespace: wait for its page.
  for (;;) {
    const ok = await fetch(o.url, { signal: AbortSignal.timeout(1000) }).then((r) => r.ok, () => false);
    if (ok) break;
    if (stopRequested || Date.now() > deadline) throw new Error(`no page at ${o.url}`);
    await sleep(200);
  }
  mark('page_reachable');
  browser = await until(launchChromium({ logFile: `${base}.chromium.log` }));
  mark('browser');
  // A navigation can fail with ERR_NETWORK_CHANGED while the bed is still changing the
  // namespace's interfaces at the flow's start: try again (5 times, 0.5 s apart).
  const page = await until(browser.newPage('about:blank'));
  const load = async () => {
    for (let attempt = 1; ; attempt++) {
      try {
        await until(page.goto(o.url));
        return;
      } catch (err) {
        if (stopRequested || attempt >= 5 || Date.now() > deadline) throw err;
        log(`page load failed (${err.message}), again`);
        await sleep(500);
      }
    }
  };
  await load();
  page.on('crashed', () => { log('page crashed'); stop('crash'); });
  // The same network change can cancel the player's WHEP POST after the page loaded (seen on
  // the bed: Chromium resets the connection on the server's SYN-ACK and the fetch fails with
  // "Failed to fetch"; no request reached the server): load the page again, twice at most.
  for (let reloads = 0; ;) {
    const st = await until(page.evaluate('window.predrop ? [window.predrop.session, window.predrop.error] : [null, null]'));
    if (st[1] && /Failed to fetch/.test(st[1]) && reloads < 2 && !stopRequested) {
      reloads++;
      meta.player_reloads = reloads;
      log(`the player's request failed (${st[1]}), page loaded again`);
      await sleep(500);
      await load();
      continue;
    }
    if (st[1]) throw new Error(`the player failed: ${st[1]}`);
    if (st[0]) { meta.session = st[0]; break; }
    if (Date.now() > deadline) throw new Error('no WHEP session');
    await sleep(100);
  }
  mark('session');
  const csv = fs.createWriteStream(`${base}.csv`);
  csv.write(['kind', 't', ...COUNTERS, 'jitter_buffer_ms', 'connection', ...QUALITY].join(',') + '\n');
  let last = null;
  let nq = 0;
  let next = t0 + Math.ceil((Date.now() - t0) / 1000) * 1000;
  while (!stopRequested && next <= deadline) {
    const tick = sleep(Math.max(0, next - Date.now())).then(() => 'tick');
    if ((await Promise.race([tick, stopped])) !== 'tick') break;
    try {
      const s = await page.evaluate(SAMPLE);
      if (s.framesDecoded > 0 && !meta.timings.first_frame) mark('first_frame');
      const jbMs = last && s.jbn > last.jbn ? (1000 * (s.jb - last.jb)) / (s.jbn - last.jbn) : '';
      csv.write(['stats', caseS(next), ...COUNTERS.map((k) => s[k]),
        jbMs === '' ? '' : jbMs.toFixed(1), s.connection, ...QUALITY.map(() => '')].join(',') + '\n');
      last = s;
      // The page's seconds of quality since the last read, on the case clock.
      const q = await page.evaluate(`window.predrop.quality.slice(${nq})`);
      nq += q.length;
      for (const r of q) {
        csv.write(['quality', caseS(s.timeOrigin + r.t_ms), ...COUNTERS.map(() => ''), '', '',
          ...QUALITY.map((k) => (r[k] === null || r[k] === undefined ? '' : r[k]))].join(',') + '\n');
      }
    } catch (err) {
      log(`sample failed: ${err.message}`);
    }
    next += 1000;
  }
  await new Promise((r) => csv.end(r));
  meta.ended = (Date.now() - t0) / 1000;
  meta.last = last;
  meta.quality_seconds = nq;
  meta.cpu_seconds = browser.cpuSeconds();
  fs.writeFileSync(`${base}.json`, JSON.stringify(meta, null, 2));
  log(`done: ${last ? last.framesDecoded : 0} frames decoded, ${nq} seconds of quality`);
  return last && last.framesDecoded > 0 ? 0 : 1;
}

main().then(async (code) => {
  if (browser) await browser.close().catch(() => {});
  process.exit(code);
}, async (err) => {
  console.error(`whep-viewer.mjs: ${err.stack || err.message}`);
  if (browser) await browser.close().catch(() => {});
  process.exit(1);
});
