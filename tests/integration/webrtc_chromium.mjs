// Drives headless Chromium at predrop-server's WHEP player page (webrtc_chromium.sh starts the
// server) and checks that the browser plays the stream over WebRTC: ICE and DTLS connect, and
// getStats() counts at least MIN_FRAMES decoded frames within PLAY_S seconds of play; then it
// DELETEs the session through the page. Prints one JSON line of the figures. With MIN_AUDIO > 0
// (a clip with Opus) the audio must play too: at least MIN_AUDIO Opus packets received in the
// PLAY_S seconds, and decoded, not concealed: concealed samples < 20 % of the samples received
// in them (what NetEq makes up for missing packets; a stream it could not decode would be all
// concealment). With MIN_AUDIO = 0 no audio packet may arrive (the answer rejects the section).
//   node webrtc_chromium.mjs PAGE_URL OUTDIR MIN_FRAMES PLAY_S [MIN_AUDIO]
// Polls the page (no fixed sleep as the verdict); every wait has a deadline.

import path from 'node:path';

import { fail, launchChromium, sleep, waitFor, watchProblems } from './cdp_pipe.mjs';

const [url, outdir, minFramesArg, playArg, minAudioArg] = process.argv.slice(2);
const minAudio = Number(minAudioArg || 0);
const minFrames = Number(minFramesArg);
const playS = Number(playArg);
if (!url || !outdir || !(minFrames > 0) || !(playS > 0)) {
  console.error('usage: node webrtc_chromium.mjs PAGE_URL OUTDIR MIN_FRAMES PLAY_S');
  process.exit(2);
}
let problems = [];

const browser = await launchChromium({
  logFile: path.join(outdir, 'browser.log'),
  // The server and its host candidate are on 127.0.0.1; Chromium gathers no loopback
  // candidates without this, and a check from eth0 to 127.0.0.1 is answered from eth0's address.
  args: ['--allow-loopback-in-peer-connection'],
});
let status = 1;
try {
  const page = await browser.newPage('about:blank');
  problems = watchProblems(page);
  await page.send('Runtime.enable').catch(() => {});
  await page.goto(url);
  await waitFor(page, 'the player to start', 'window.predrop && (window.predrop.session || window.predrop.error)', 10000);
  const err = await page.evaluate("window.predrop.error");
  if (err) fail(`the player failed: ${err}`);
  const session = await page.evaluate('window.predrop.session');
  const t0 = Date.now();
  const connected = await waitFor(page, 'ICE and DTLS to connect',
    `window.predrop.stats().then((s) => s.connection === 'connected' ? s : null)`, 15000);
  const connectMs = Date.now() - t0;
  await waitFor(page, 'the first decoded frame',
    `window.predrop.stats().then((s) => s.framesDecoded > 0 ? s : null)`, 15000);
  const firstFrameMs = Date.now() - t0;
  const start = await page.evaluate('window.predrop.stats()');
  const deadline = Date.now() + playS * 1000;
  let s = start;
  while (Date.now() < deadline) {
    await sleep(250);
    s = await page.evaluate('window.predrop.stats()');
    if (s.connection === 'failed' || s.dtls === 'failed' || s.ice === 'failed') {
      fail(`connection failed while playing: ${JSON.stringify(s)}`);
    }
  }
  const decoded = s.framesDecoded - start.framesDecoded;
  // The page's quality per second of play (docs/webrtc.md "Quality in the page").
  const blocks = (await page.evaluate('JSON.stringify(window.predrop.quality)'));
  const quality = JSON.parse(blocks).slice(-playS);
  const audio = {
    codec: s.audio.codec,
    packets: s.audio.packetsReceived - start.audio.packetsReceived,
    packets_lost: s.audio.packetsLost,
    samples: s.audio.totalSamplesReceived - start.audio.totalSamplesReceived,
    concealed: s.audio.concealedSamples - start.audio.concealedSamples,
    silent_concealed: s.audio.silentConcealedSamples - start.audio.silentConcealedSamples,
    concealment_events: s.audio.concealmentEvents - start.audio.concealmentEvents,
  };
  audio.concealed_ratio = audio.samples > 0 ? +(audio.concealed / audio.samples).toFixed(4) : null;
  const events = await page.evaluate('window.predrop.events');
  const figures = { session, codec: s.codec, connect_ms: connectMs, first_frame_ms: firstFrameMs,
    play_s: playS, frames_decoded: decoded, frames_dropped: s.framesDropped,
    freezes: s.freezeCount, freeze_s: s.totalFreezesDuration, packets: s.packetsReceived,
    packets_lost: s.packetsLost, nacks: s.nackCount, plis: s.pliCount, firs: s.firCount,
    rtx_received: s.retransmittedPacketsReceived, audio, dtls: s.dtls, events,
    quality_p_min: quality.length ? Math.min(...quality.map((q) => q.p)) : null,
    quality: quality.map((q) => [q.frames_decoded, q.frames_dropped, q.freezes, q.freeze_ms,
      +q.p.toFixed(3)]),
    first: connected.connection };
  console.log(JSON.stringify(figures));
  if (decoded < minFrames) fail(`only ${decoded} frames decoded in ${playS} s (want >= ${minFrames})`);
  if (quality.length < playS - 1 || quality.some((q) => !(q.p >= 0 && q.p <= 1))) {
    fail(`the page's quality per second is missing or out of range: ${blocks}`);
  }
  if (minAudio > 0) {
    if (!/opus/i.test(audio.codec)) fail(`no Opus audio negotiated (codec '${audio.codec}')`);
    if (audio.packets < minAudio) {
      fail(`only ${audio.packets} audio packets in ${playS} s (want >= ${minAudio})`);
    }
    if (!(audio.samples > 0) || audio.concealed / audio.samples >= 0.2) {
      fail(`audio not decoded: ${audio.concealed} of ${audio.samples} samples concealed`);
    }
  } else if (s.audio.packetsReceived > 0) {
    fail(`${s.audio.packetsReceived} audio packets arrived although no audio should be sent`);
  }
  const deleted = await page.evaluate(
    `fetch(window.predrop.session, { method: 'DELETE' }).then((r) => r.status)`);
  if (deleted !== 200) fail(`DELETE answered ${deleted}`);
  if (problems.length) fail(`the page reported problems:\n  ${problems.join('\n  ')}`);
  console.log('webrtc chromium: ok');
  status = 0;
} catch (e) {
  console.error(`webrtc chromium: FAILED: ${e.message}`);
  if (problems.length) console.error(`  ${problems.join('\n  ')}`);
} finally {
  await browser.close();
}
process.exit(status);
