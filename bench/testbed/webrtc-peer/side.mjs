#!/usr/bin/env node
// One side of one WebRTC call, for the bed's external media hook (run-case.sh --media ext:SCRIPT,
// through ext-media.sh): a Chromium of its own in the namespace this process already runs in,
// one RTCPeerConnection, getStats every second into a CSV. The two sides of a flow find each
// other through files in a folder both can read (the run's output folder; the namespaces share
// the filesystem), so the call needs nothing outside the bed:
//
//   DIR/webrtc/flow-I/seg-K/offer.sdp    written by the sender (K: first free number)
//   DIR/webrtc/flow-I/seg-K/claimed/     made by the receiver that answers it (mkdir is atomic)
//   DIR/webrtc/flow-I/seg-K/answer.sdp   written by that receiver
//   DIR/webrtc/flow-I/seg-K/{sender,receiver}.csv, meta-{sender,receiver}.json, chromium-*.log
//
// A segment is one call; a flow that pauses and resumes (RFC 8867 §5.8 on this bed) is two.
//
//   side.mjs sender|receiver --flow I --listen IP --peer IP --out DIR --seconds N
//            [--video FILE.y4m] [--audio FILE.wav] [--codec h264|vp8] [--max-bitrate BPS]
//            [--degradation PREF] [--field-trials STRING] [--no-video-element]
//
// --no-video-element: the receiver decodes but shows the video nowhere (saves ~0.05 core a call).
// --listen keeps only that address's ICE candidates in this side's SDP. Rows are timed from
// DIR/t0 (the case's zero, seconds since the epoch) when it exists, else from this side's start,
// and sampled on whole seconds of that clock. Ends after N seconds or on SIGTERM/SIGINT/SIGHUP
// (the bed's stop), closing its browser. Exit 0 when it connected (and, receiving, decoded).

import fs from 'node:fs';
import path from 'node:path';
import { launchChromium } from './chromium.mjs';
import { PEER_PAGE, StatsFiles, mediaFlags, onlyCandidatesOf, senderOptions } from './session.mjs';

function usage(msg) {
  if (msg) console.error(`side.mjs: ${msg}`);
  console.error('usage: side.mjs sender|receiver --flow I --listen IP --peer IP --out DIR --seconds N ' +
    '[--video Y4M] [--audio WAV] [--codec h264|vp8] [--max-bitrate BPS] [--degradation PREF] [--field-trials S]');
  process.exit(2);
}

function parseArgs(argv) {
  const o = {
    role: argv[0], flow: null, listen: null, peer: null, out: null, seconds: 0, video: null, audio: null,
    codec: 'h264', maxBitrate: 0, degradation: 'maintain-resolution', fieldTrials: '', videoElement: true,
  };
  if (!['sender', 'receiver'].includes(o.role)) usage('first argument is sender or receiver');
  for (let i = 1; i < argv.length; i += 2) {
    if (argv[i] === '--no-video-element') { o.videoElement = false; i--; continue; }
    const v = argv[i + 1];
    if (v === undefined) usage(`${argv[i]} needs a value`);
    switch (argv[i]) {
      case '--flow': o.flow = Number(v); break;
      case '--listen': o.listen = v; break;
      case '--peer': o.peer = v; break;
      case '--out': o.out = v; break;
      case '--seconds': o.seconds = Number(v); break;
      case '--video': o.video = v; break;
      case '--audio': o.audio = v; break;
      case '--codec': o.codec = v.toLowerCase(); break;
      case '--max-bitrate': o.maxBitrate = Number(v); break;
      case '--degradation': o.degradation = v; break;
      case '--field-trials': o.fieldTrials = v; break;
      default: usage(`unknown argument ${argv[i]}`);
    }
  }
  if (!(o.flow >= 0) || !o.out || !(o.seconds > 0)) usage('--flow, --out and --seconds are required');
  if (o.role === 'sender' && !o.video) usage('a sender needs --video');
  if (!['vp8', 'h264'].includes(o.codec)) usage('--codec is h264 or vp8');
  return o;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function writeAtomic(file, text) {
  fs.writeFileSync(`${file}.tmp`, text);
  fs.renameSync(`${file}.tmp`, file);
}

async function waitFor(what, fn, deadline) {
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

// The sender takes the first segment number nobody has taken.
function newSegment(flowDir) {
  fs.mkdirSync(flowDir, { recursive: true });
  for (let k = 0; ; k++) {
    const dir = path.join(flowDir, `seg-${k}`);
    try {
      fs.mkdirSync(dir);
      return dir;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
  }
}

// The receiver answers the oldest offer nobody has claimed yet.
function claimOffer(flowDir) {
  let names;
  try { names = fs.readdirSync(flowDir).filter((n) => n.startsWith('seg-')); } catch { return null; }
  names.sort((a, b) => Number(a.slice(4)) - Number(b.slice(4)));
  for (const n of names) {
    const dir = path.join(flowDir, n);
    if (!fs.existsSync(path.join(dir, 'offer.sdp'))) continue;
    try {
      fs.mkdirSync(path.join(dir, 'claimed'));
      return dir;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
  }
  return null;
}

let browser = null;
let finish = null;

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const startedAt = Date.now();
  const log = (...a) => console.error(`[${o.role} ${o.flow} ${new Date().toISOString().slice(11, 23)}]`, ...a);
  let stopRequested = false;
  const stopped = new Promise((resolve) => { finish = resolve; });
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => { stopRequested = true; finish(sig); });

  const t0File = path.join(o.out, 't0');
  const t0 = fs.existsSync(t0File) ? Math.round(parseFloat(fs.readFileSync(t0File, 'utf8')) * 1000) : startedAt;
  const flowDir = path.join(o.out, 'webrtc', `flow-${o.flow}`);
  // The sender names the segment at once, so that its browser's log lands there.
  let seg = o.role === 'sender' ? newSegment(flowDir) : null;
  const logDir = seg || flowDir;
  fs.mkdirSync(logDir, { recursive: true });
  const args = [
    ...(o.role === 'sender' ? mediaFlags(o.video, o.audio) : []),
    ...(o.fieldTrials ? [`--force-fieldtrials=${o.fieldTrials}`] : []),
  ];
  const timings = {};
  const mark = (what) => { timings[what] = (Date.now() - startedAt) / 1000; };
  browser = await launchChromium({ args, url: PEER_PAGE, logFile: path.join(logDir, `chromium-${o.role}-${process.pid}.log`) });
  mark('browser');
  const page = await browser.newPage(PEER_PAGE);
  mark('page');
  page.on('crashed', () => { log('page crashed'); finish('crash'); });
  const deadline = startedAt + o.seconds * 1000;
  const meta = {
    role: o.role, flow: o.flow, options: o, browser: browser.version.product, started: new Date(startedAt).toISOString(), timings,
  };

  if (o.role === 'sender') {
    const offer = onlyCandidatesOf(await page.evaluate(`peer.offer(${o.flow}, ${JSON.stringify(senderOptions(o))})`), o.listen);
    writeAtomic(path.join(seg, 'offer.sdp'), offer);
    mark('offer');
    const answerFile = path.join(seg, 'answer.sdp');
    const answer = await Promise.race([
      waitFor('the answer', () => fs.existsSync(answerFile) && fs.readFileSync(answerFile, 'utf8'), deadline),
      stopped.then(() => { throw new Error('stopped before the call connected'); }),
    ]);
    mark('answer');
    Object.assign(meta, await page.evaluate(`peer.accept(${o.flow}, ${JSON.stringify(answer)})`));
  } else {
    seg = await Promise.race([
      waitFor('an offer', () => claimOffer(flowDir), deadline),
      stopped.then(() => { throw new Error('stopped before an offer came'); }),
    ]);
    mark('offer');
    const offer = fs.readFileSync(path.join(seg, 'offer.sdp'), 'utf8');
    const answer = onlyCandidatesOf(await page.evaluate(`peer.answer(${o.flow}, ${JSON.stringify(offer)}, ${JSON.stringify({ noVideoElement: !o.videoElement })})`), o.listen);
    writeAtomic(path.join(seg, 'answer.sdp'), answer);
    mark('answer');
    await page.evaluate(`peer.connected(${o.flow})`);
  }
  mark('connected');
  meta.segment = path.basename(seg);
  meta.connected_at = (Date.now() - t0) / 1000;
  meta.setup_seconds = (Date.now() - startedAt) / 1000;
  meta.t0_epoch = t0 / 1000;
  const [first] = await page.evaluate('peer.sample()');
  meta.tuple = first?.tuple;
  const metaFile = path.join(seg, `meta-${o.role}.json`);
  writeAtomic(metaFile, JSON.stringify(meta, null, 2));
  log(`connected in ${meta.setup_seconds.toFixed(1)} s (${meta.segment}, ${meta.tuple})`);

  const side = o.role === 'sender' ? 's' : 'r';
  const stats = new StatsFiles(seg, t0, { sender: side === 's', receiver: side === 'r' });
  const cpu0 = { at: Date.now(), s: browser.cpuSeconds() };
  // Samples on whole seconds of the case clock, until the deadline or a stop.
  let next = t0 + Math.ceil((Date.now() - t0) / 1000) * 1000;
  while (!stopRequested && next <= deadline) {
    const wait = sleep(Math.max(0, next - Date.now()));
    if ((await Promise.race([wait.then(() => 'tick'), stopped])) !== 'tick') break;
    try {
      stats.write(side, await page.evaluate('peer.sample()'), next);
    } catch (err) {
      log(`sample failed: ${err.message}`);
    }
    next += 1000;
  }
  await stats.close();
  const last = stats.lastOf(side, o.flow) || {};
  meta.cpu_cores = (browser.cpuSeconds() - cpu0.s) / ((Date.now() - cpu0.at) / 1000);
  meta.ended_at = (Date.now() - t0) / 1000;
  meta.frames = side === 's' ? last.frames_encoded : last.frames_decoded;
  meta.codec = last.codec;
  writeAtomic(metaFile, JSON.stringify(meta, null, 2));
  log(`done: ${side === 's' ? 'encoded' : 'decoded'} ${meta.frames} frames (${meta.codec})`);
  return meta.frames > 0 ? 0 : 1;
}

main().then(async (code) => {
  if (browser) await browser.close().catch(() => {});
  process.exit(code);
}, async (err) => {
  console.error(`side.mjs: ${err.stack || err.message}`);
  if (browser) await browser.close().catch(() => {});
  process.exit(1);
});
