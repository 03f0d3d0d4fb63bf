#!/usr/bin/env node
// N WebRTC calls Chromium -> Chromium through the bed: a sender browser in one network namespace
// and a receiver browser in another, both driven from this process over their DevTools pipes; the
// SDP goes from one to the other through this process, so the calls need nothing outside the bed.
// Each flow is its own RTCPeerConnection (its own 5-tuple, its own Google Congestion Control).
// Every second it samples getStats on both sides into sender.csv and receiver.csv.
//
//   call.mjs --out DIR --video FILE.y4m [--audio FILE.wav] [--sender-netns NS] [--receiver-netns NS]
//            [--flows N] [--pages P] [--duration S] [--codec h264|vp8] [--max-bitrate BPS]
//            [--degradation maintain-resolution|maintain-framerate|balanced]
//            [--event "T start|stop|pause|resume FLOW"]... [--sender-ip FLOW=IP]... [--receiver-ip FLOW=IP]...
//            [--field-trials STRING] [--no-video-element] [--quiet]
//
// Flows are numbered 0..N-1. --receiver-netns takes one namespace or a comma-separated list: flow
// f is received in the f-th (cyclically), one receiver browser per distinct namespace (the bed
// gives each flow its own receiver namespace). Each browser spreads its flows round-robin over up
// to P pages (default 1 page).
// Without --event every flow starts at t = 0 and runs for the whole duration; with a "start"
// event for a flow, that flow starts then instead. --sender-ip/--receiver-ip keep only that
// address's ICE candidates for the flow (per-flow routes on a bed with several addresses).
// Exit status: 0 when every flow connected and decoded frames, 1 otherwise, 2 on bad usage.
// See README.md beside this file.

import fs from 'node:fs';
import path from 'node:path';
import { launchChromium } from './chromium.mjs';
import { PEER_PAGE, StatsFiles, mediaFlags, onlyCandidatesOf, senderOptions } from './session.mjs';

// Every browser started, so that any way out (end, error, signal) closes them all.
const browsers = [];
let closing = false;
async function shutdown(code) {
  if (closing) return;
  closing = true;
  await Promise.all(browsers.map((b) => b.close().catch(() => {})));
  process.exit(code);
}

function usage(msg) {
  if (msg) console.error(`call.mjs: ${msg}`);
  console.error('usage: call.mjs --out DIR --video FILE.y4m [--audio FILE.wav] [--sender-netns NS] [--receiver-netns NS] ' +
    '[--flows N] [--pages P] [--duration S] [--codec h264|vp8] [--max-bitrate BPS] [--degradation PREF] ' +
    '[--event "T start|stop|pause|resume FLOW"]... [--sender-ip FLOW=IP]... [--receiver-ip FLOW=IP]...');
  process.exit(2);
}

function parseArgs(argv) {
  const o = {
    out: null, video: null, audio: null, senderNetns: null, receiverNetns: null, flows: 1, pages: 1,
    duration: 30, codec: 'h264', maxBitrate: 0, degradation: 'maintain-resolution', events: [],
    senderIp: {}, receiverIp: {}, fieldTrials: '', videoElement: true, quiet: false,
  };
  const need = (i) => { if (i + 1 >= argv.length) usage(`${argv[i]} needs a value`); return argv[i + 1]; };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const ipArg = (map) => { const [f, ip] = need(i).split('='); map[Number(f)] = ip; i++; };
    switch (a) {
      case '--out': o.out = need(i); i++; break;
      case '--video': o.video = need(i); i++; break;
      case '--audio': o.audio = need(i); i++; break;
      case '--sender-netns': o.senderNetns = need(i); i++; break;
      case '--receiver-netns': o.receiverNetns = need(i); i++; break;
      case '--flows': o.flows = Number(need(i)); i++; break;
      case '--pages': o.pages = Number(need(i)); i++; break;
      case '--duration': o.duration = Number(need(i)); i++; break;
      case '--codec': o.codec = need(i).toLowerCase(); i++; break;
      case '--max-bitrate': o.maxBitrate = Number(need(i)); i++; break;
      case '--degradation': o.degradation = need(i); i++; break;
      case '--event': o.events.push(need(i)); i++; break;
      case '--sender-ip': ipArg(o.senderIp); break;
      case '--receiver-ip': ipArg(o.receiverIp); break;
      case '--field-trials': o.fieldTrials = need(i); i++; break;
      case '--no-video-element': o.videoElement = false; break;
      case '--quiet': o.quiet = true; break;
      default: usage(`unknown argument ${a}`);
    }
  }
  if (!o.out || !o.video) usage('--out and --video are required');
  if (!(o.flows >= 1) || !(o.pages >= 1) || !(o.duration > 0)) usage('bad --flows/--pages/--duration');
  if (!['vp8', 'h264'].includes(o.codec)) usage('--codec is vp8 or h264');
  o.events = o.events.map((e) => {
    const [t, what, flow] = e.trim().split(/\s+/);
    if (!['start', 'stop', 'pause', 'resume'].includes(what) || !(Number(flow) >= 0 && Number(flow) < o.flows)) {
      usage(`bad event "${e}"`);
    }
    return { t: Number(t), what, flow: Number(flow) };
  }).sort((a, b) => a.t - b.t);
  return o;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  fs.mkdirSync(o.out, { recursive: true });
  const log = (...a) => { if (!o.quiet) console.error(`[call ${new Date().toISOString().slice(11, 23)}]`, ...a); };
  const trialArgs = o.fieldTrials ? [`--force-fieldtrials=${o.fieldTrials}`] : [];
  const mediaArgs = [...mediaFlags(o.video, o.audio), ...trialArgs];
  process.on('SIGINT', () => shutdown(130));
  process.on('SIGTERM', () => shutdown(143));
  process.on('SIGHUP', () => shutdown(129));

  // One sender browser; one receiver browser per distinct receiver namespace (flow f is received
  // in namespace f of the comma-separated list, cyclically). Each browser spreads its flows over
  // up to P pages.
  const rcvNetns = (o.receiverNetns || '').split(',');
  const rcvNsOf = (f) => rcvNetns[f % rcvNetns.length] || null;
  const openSide = async (name, netns, args, nflows) => {
    const browser = await launchChromium({ netns, args, url: PEER_PAGE, logFile: path.join(o.out, `chromium-${name}.log`) });
    browsers.push(browser);
    const pages = [];
    for (let p = 0; p < Math.min(o.pages, nflows); p++) pages.push(await browser.newPage(PEER_PAGE));
    for (const pg of pages) {
      pg.on('console', (text, type) => { if (type === 'error' || type === 'warning') log(`${name} page ${type}: ${text}`); });
      pg.on('crashed', () => { log(`a ${name} page crashed`); shutdown(1); });
    }
    return { name, netns, browser, pages, flows: [] };
  };
  const rcvNames = [...new Set(Array.from({ length: o.flows }, (_, f) => rcvNsOf(f)))];
  const [snd, ...rcvSides] = await Promise.all([
    openSide('sender', o.senderNetns, mediaArgs, o.flows),
    ...rcvNames.map((ns, i) => openSide(rcvNames.length > 1 ? `receiver${i}` : 'receiver', ns, trialArgs,
      Array.from({ length: o.flows }, (_, f) => f).filter((f) => rcvNsOf(f) === ns).length)),
  ]);
  for (let f = 0; f < o.flows; f++) rcvSides[rcvNames.indexOf(rcvNsOf(f))].flows.push(f);
  const sndPageOf = (f) => snd.pages[f % snd.pages.length];
  const rcvPageOf = (f) => {
    const side = rcvSides[rcvNames.indexOf(rcvNsOf(f))];
    return side.pages[side.flows.indexOf(f) % side.pages.length];
  };
  log(`browsers up: sender pid ${snd.browser.pid} (${o.senderNetns || 'this ns'}), receivers ` +
    `${rcvSides.map((r) => `pid ${r.browser.pid} (${r.netns || 'this ns'})`).join(', ')}, ${snd.browser.version.product}`);
  const caps = await snd.pages[0].evaluate('peer.capabilities()');
  const recvCaps = await rcvSides[0].pages[0].evaluate('peer.capabilities()');
  const meta = {
    started: new Date().toISOString(), browser: snd.browser.version.product, options: o,
    sender_video_codecs: caps.sendVideo, receiver_video_codecs: recvCaps.recvVideo, flows: {},
  };
  const writeMeta = () => fs.writeFileSync(path.join(o.out, 'meta.json'), JSON.stringify(meta, null, 2));
  writeMeta();

  const peerOpts = senderOptions({ ...o, maxBitrate: o.maxBitrate });
  async function startFlow(f) {
    const sp = sndPageOf(f);
    const rp = rcvPageOf(f);
    const offer = onlyCandidatesOf(await sp.evaluate(`peer.offer(${f}, ${JSON.stringify(peerOpts)})`), o.senderIp[f]);
    const answer = onlyCandidatesOf(
      await rp.evaluate(`peer.answer(${f}, ${JSON.stringify(offer)}, ${JSON.stringify({ noVideoElement: !o.videoElement })})`),
      o.receiverIp[f]);
    const applied = await sp.evaluate(`peer.accept(${f}, ${JSON.stringify(answer)})`);
    await rp.evaluate(`peer.connected(${f})`);
    const [tuple] = (await sp.evaluate('peer.sample()')).filter((r) => r.flow === f).map((r) => r.tuple);
    meta.flows[f] = { started_at: (Date.now() - t0) / 1000, tuple, ...applied };
    writeMeta();
    log(`flow ${f} connected: ${JSON.stringify(applied)}`);
  }

  // t = 0 is when the flows that start at once are connected; events and samples count from it.
  let t0 = Date.now();
  const explicitStarts = new Set(o.events.filter((e) => e.what === 'start').map((e) => e.flow));
  const initial = [];
  for (let f = 0; f < o.flows; f++) if (!explicitStarts.has(f)) initial.push(f);
  await Promise.all(initial.map(startFlow));
  const setup = (Date.now() - t0) / 1000;
  t0 = Date.now();
  for (const f of initial) meta.flows[f].started_at = 0;
  meta.setup_seconds = setup;
  meta.t0_epoch = t0 / 1000;
  fs.writeFileSync(path.join(o.out, 't0'), `${t0 / 1000}\n`);
  const stats = new StatsFiles(o.out, t0);

  const pending = [...o.events];
  const timers = pending.map((e) => setTimeout(async () => {
    try {
      if (e.what === 'start') await startFlow(e.flow);
      else if (e.what === 'stop') {
        await Promise.all([sndPageOf(e.flow).evaluate(`peer.close(${e.flow})`), rcvPageOf(e.flow).evaluate(`peer.close(${e.flow})`)]);
      } else {
        await sndPageOf(e.flow).evaluate(`peer.pause(${e.flow}, ${e.what === 'pause'})`);
      }
      log(`event +${e.t}s ${e.what} ${e.flow}`);
    } catch (err) {
      log(`event +${e.t}s ${e.what} ${e.flow} failed: ${err.message}`);
    }
  }, Math.max(0, e.t * 1000 - (Date.now() - t0))));

  async function sampleOnce() {
    const now = Date.now();
    const pages = [...snd.pages.map((p) => ['s', p]), ...rcvSides.flatMap((r) => r.pages.map((p) => ['r', p]))];
    const results = await Promise.all(pages.map(([side, p]) => p.evaluate('peer.sample()').then((rows) => [side, rows])));
    for (const [side, rows] of results) stats.write(side, rows, now);
  }

  const rcvCpu = () => rcvSides.reduce((a, r) => a + r.browser.cpuSeconds(), 0);
  const cpuStart = { at: Date.now(), snd: snd.browser.cpuSeconds(), rcv: rcvCpu() };
  const end = t0 + o.duration * 1000;
  let next = Date.now() + 1000;
  while (next <= end) {
    await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
    try {
      await sampleOnce();
    } catch (err) {
      log(`sample failed: ${err.message}`);
    }
    next += 1000;
  }
  timers.forEach(clearTimeout);
  const cpuWall = (Date.now() - cpuStart.at) / 1000;
  meta.cpu_cores = {
    sender: (snd.browser.cpuSeconds() - cpuStart.snd) / cpuWall, receiver: (rcvCpu() - cpuStart.rcv) / cpuWall,
    over_seconds: cpuWall, note: 'CPU seconds per wall second of each browser process group, from all flows connected to the end',
  };
  await stats.close();

  let ok = true;
  for (let f = 0; f < o.flows; f++) {
    const r = stats.lastOf('r', f);
    const decoded = r?.frames_decoded ?? 0;
    meta.flows[f] = { ...meta.flows[f], frames_decoded: decoded, frames_dropped: r?.frames_dropped, packets_lost: r?.packets_lost, codec: r?.codec, decoder: r?.decoder };
    const stopped = o.events.some((e) => e.flow === f && e.what === 'stop');
    if (!(decoded > 0) && !stopped) ok = false;
  }
  meta.ended = new Date().toISOString();
  writeMeta();
  log(`done: ${Object.entries(meta.flows).map(([f, v]) => `flow ${f} decoded ${v.frames_decoded}`).join(', ')}`);
  await shutdown(ok ? 0 : 1);
}

main().catch(async (err) => {
  console.error(`call.mjs: ${err.stack || err.message}`);
  await shutdown(1);
});
