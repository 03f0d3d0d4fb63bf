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
import { fileURLToPath } from 'node:url';
import { launchChromium } from './chromium.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

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

const CODECS = {
  // H.264 constrained baseline, packetization mode 1: what Chromium offers first when it has
  // H.264 at all. VP8 has no profile to choose.
  vp8: { codec: 'video/VP8' },
  h264: { codec: 'video/H264', fmtp: 'packetization-mode=1;profile-level-id=42e01f' },
};

// Keeps only the ICE candidates of ADDRESS in an SDP (per-flow routes); others are dropped.
function onlyCandidatesOf(sdp, address) {
  if (!address) return sdp;
  const lines = sdp.split('\r\n').filter((l) => !l.startsWith('a=candidate:') || l.split(' ')[4] === address);
  if (!lines.some((l) => l.startsWith('a=candidate:'))) throw new Error(`no ICE candidate on ${address}`);
  return lines.join('\r\n');
}

const SENDER_COLUMNS = [
  't', 'epoch', 'flow', 'state', 'available_outgoing_kbps', 'target_kbps', 'send_kbps', 'transport_send_kbps',
  'retransmit_kbps', 'source_frames', 'capture_fps', 'frames_encoded', 'frames_sent', 'encode_fps', 'frame_width', 'frame_height',
  'quality_limitation_reason', 'qp_mean', 'rtt_ms', 'remote_packets_lost', 'remote_fraction_lost', 'nack_count',
  'pli_count', 'bytes_sent', 'packets_sent', 'codec', 'encoder', 'tuple',
];
const RECEIVER_COLUMNS = [
  't', 'epoch', 'flow', 'state', 'recv_kbps', 'transport_recv_kbps', 'packets_received', 'packets_lost',
  'loss_pct', 'frames_received', 'frames_decoded', 'decode_fps', 'frames_dropped', 'freeze_count',
  'total_freezes_duration', 'jitter_buffer_delay_ms', 'jitter_ms', 'frame_width', 'frame_height', 'qp_mean',
  'nack_count', 'pli_count', 'bytes_received', 'codec', 'decoder', 'tuple',
];

function csvLine(cols, row) {
  return cols.map((c) => {
    const v = row[c];
    if (v === undefined || v === null || (typeof v === 'number' && !Number.isFinite(v))) return '';
    if (typeof v === 'number') return Number.isInteger(v) ? String(v) : v.toFixed(3);
    return /[",\n]/.test(v) ? `"${String(v).replace(/"/g, '""')}"` : String(v);
  }).join(',');
}

// Per-interval figures from two cumulative samples of one flow (or from the first alone).
function senderRow(cur, prev, dt) {
  const d = (k) => (prev && cur[k] !== undefined && prev[k] !== undefined ? cur[k] - prev[k] : undefined);
  const kbps = (bytes) => (bytes !== undefined && dt > 0 ? (bytes * 8) / dt / 1000 : undefined);
  const frames = d('frames_encoded');
  return {
    ...cur,
    available_outgoing_kbps: cur.available_outgoing_bitrate / 1000,
    target_kbps: cur.target_bitrate / 1000,
    send_kbps: kbps(d('bytes_sent') + d('header_bytes_sent')),
    transport_send_kbps: kbps(d('transport_bytes_sent')),
    retransmit_kbps: kbps(d('retransmitted_bytes_sent')),
    encode_fps: frames !== undefined ? frames / dt : undefined,
    capture_fps: d('source_frames') !== undefined ? d('source_frames') / dt : undefined,
    qp_mean: frames ? d('qp_sum') / frames : undefined,
  };
}

function receiverRow(cur, prev, dt) {
  const d = (k) => (prev && cur[k] !== undefined && prev[k] !== undefined ? cur[k] - prev[k] : undefined);
  const kbps = (bytes) => (bytes !== undefined && dt > 0 ? (bytes * 8) / dt / 1000 : undefined);
  const recv = d('packets_received');
  const lost = d('packets_lost');
  const emitted = d('jitter_buffer_emitted_count');
  const decoded = d('frames_decoded');
  return {
    ...cur,
    recv_kbps: kbps(d('bytes_received') + d('header_bytes_received')),
    transport_recv_kbps: kbps(d('transport_bytes_received')),
    loss_pct: recv !== undefined && recv + lost > 0 ? (100 * lost) / (recv + lost) : undefined,
    decode_fps: decoded !== undefined ? decoded / dt : undefined,
    jitter_buffer_delay_ms: emitted ? (1000 * d('jitter_buffer_delay')) / emitted : undefined,
    qp_mean: decoded ? d('qp_sum') / decoded : undefined,
  };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  fs.mkdirSync(o.out, { recursive: true });
  const log = (...a) => { if (!o.quiet) console.error(`[call ${new Date().toISOString().slice(11, 23)}]`, ...a); };
  const mediaArgs = [
    '--use-fake-device-for-media-stream', `--use-file-for-fake-video-capture=${path.resolve(o.video)}`,
    ...(o.audio ? [`--use-file-for-fake-audio-capture=${path.resolve(o.audio)}`] : []),
    ...(o.fieldTrials ? [`--force-fieldtrials=${o.fieldTrials}`] : []),
  ];
  process.on('SIGINT', () => shutdown(130));
  process.on('SIGTERM', () => shutdown(143));
  process.on('SIGHUP', () => shutdown(129));

  // One sender browser; one receiver browser per distinct receiver namespace (flow f is received
  // in namespace f of the comma-separated list, cyclically). Each browser spreads its flows over
  // up to P pages.
  const pageUrl = `file://${path.join(here, 'peer.html')}`;
  const rcvNetns = (o.receiverNetns || '').split(',');
  const rcvNsOf = (f) => rcvNetns[f % rcvNetns.length] || null;
  const trialArgs = o.fieldTrials ? [`--force-fieldtrials=${o.fieldTrials}`] : [];
  const openSide = async (name, netns, args, nflows) => {
    const browser = await launchChromium({ netns, args, logFile: path.join(o.out, `chromium-${name}.log`) });
    browsers.push(browser);
    const pages = [];
    for (let p = 0; p < Math.min(o.pages, nflows); p++) pages.push(await browser.newPage(pageUrl));
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

  const peerOpts = {
    ...CODECS[o.codec], audio: !!o.audio, maxBitrate: o.maxBitrate || undefined,
    degradationPreference: o.degradation,
  };
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

  const sndCsv = fs.createWriteStream(path.join(o.out, 'sender.csv'));
  const rcvCsv = fs.createWriteStream(path.join(o.out, 'receiver.csv'));
  sndCsv.write(`${SENDER_COLUMNS.join(',')}\n`);
  rcvCsv.write(`${RECEIVER_COLUMNS.join(',')}\n`);
  const prev = new Map();
  const lastRcv = new Map();

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
    const results = await Promise.all(pages.map(([side, p]) => p.evaluate('peer.sample()').then((rows) => rows.map((r) => [side, r]))));
    for (const [side, r] of results.flat()) {
      const key = `${side}${r.flow}`;
      const p = prev.get(key);
      const dt = p ? (now - p.at) / 1000 : 0;
      const base = { t: (now - t0) / 1000, epoch: now / 1000 };
      if (side === 's') sndCsv.write(`${csvLine(SENDER_COLUMNS, { ...senderRow(r, p?.r, dt), ...base })}\n`);
      else {
        rcvCsv.write(`${csvLine(RECEIVER_COLUMNS, { ...receiverRow(r, p?.r, dt), ...base })}\n`);
        lastRcv.set(r.flow, r);
      }
      prev.set(key, { r, at: now });
    }
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
  await new Promise((r) => sndCsv.end(r));
  await new Promise((r) => rcvCsv.end(r));

  let ok = true;
  for (let f = 0; f < o.flows; f++) {
    const r = lastRcv.get(f);
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
