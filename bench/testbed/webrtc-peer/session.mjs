// What both drivers of the calls share (call.mjs: both sides in one process; side.mjs: one side
// per process, for the bed's external media hook): codec choice, the page options, SDP candidate
// filtering, and the per-second stats rows and their CSV files.

import fs from 'node:fs';
import path from 'node:path';

export const PEER_PAGE = new URL('./peer.html', import.meta.url).href;

/** Chromium flags of a sender: the fake camera and microphone read from files. */
export function mediaFlags(video, audio) {
  return [
    '--use-fake-device-for-media-stream', `--use-file-for-fake-video-capture=${path.resolve(video)}`,
    ...(audio ? [`--use-file-for-fake-audio-capture=${path.resolve(audio)}`] : []),
  ];
}

/** peer.offer()'s options from the command line's choices. */
export function senderOptions({ codec, audio, maxBitrate, degradation }) {
  return { ...CODECS[codec], audio: !!audio, maxBitrate: maxBitrate || undefined, degradationPreference: degradation };
}

export const CODECS = {
  // H.264 constrained baseline, packetization mode 1: what Chromium offers first when it has
  // H.264 at all. VP8 has no profile to choose.
  vp8: { codec: 'video/VP8' },
  h264: { codec: 'video/H264', fmtp: 'packetization-mode=1;profile-level-id=42e01f' },
};

// Keeps only the ICE candidates of ADDRESS in an SDP (per-flow routes); others are dropped.
export function onlyCandidatesOf(sdp, address) {
  if (!address) return sdp;
  const lines = sdp.split('\r\n').filter((l) => !l.startsWith('a=candidate:') || l.split(' ')[4] === address);
  if (!lines.some((l) => l.startsWith('a=candidate:'))) throw new Error(`no ICE candidate on ${address}`);
  return lines.join('\r\n');
}

export const SENDER_COLUMNS = [
  't', 'epoch', 'flow', 'state', 'available_outgoing_kbps', 'target_kbps', 'send_kbps', 'transport_send_kbps',
  'retransmit_kbps', 'source_frames', 'capture_fps', 'frames_encoded', 'frames_sent', 'encode_fps', 'frame_width', 'frame_height',
  'quality_limitation_reason', 'qp_mean', 'rtt_ms', 'remote_packets_lost', 'remote_fraction_lost', 'nack_count',
  'pli_count', 'bytes_sent', 'packets_sent', 'codec', 'encoder', 'tuple',
];
export const RECEIVER_COLUMNS = [
  't', 'epoch', 'flow', 'state', 'recv_kbps', 'transport_recv_kbps', 'packets_received', 'packets_lost',
  'loss_pct', 'frames_received', 'frames_decoded', 'decode_fps', 'frames_dropped', 'freeze_count',
  'total_freezes_duration', 'jitter_buffer_delay_ms', 'jitter_ms', 'frame_width', 'frame_height', 'qp_mean',
  'nack_count', 'pli_count', 'bytes_received', 'codec', 'decoder', 'tuple',
];

export function csvLine(cols, row) {
  return cols.map((c) => {
    const v = row[c];
    if (v === undefined || v === null || (typeof v === 'number' && !Number.isFinite(v))) return '';
    if (typeof v === 'number') return Number.isInteger(v) ? String(v) : v.toFixed(3);
    return /[",\n]/.test(v) ? `"${String(v).replace(/"/g, '""')}"` : String(v);
  }).join(',');
}

// Per-interval figures from two cumulative samples of one flow (or from the first alone).
export function senderRow(cur, prev, dt) {
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

export function receiverRow(cur, prev, dt) {
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


/**
 * sender.csv and receiver.csv of a run: one row per flow and side per sample, with per-interval
 * rates from the previous sample of the same flow. T0 (ms since the epoch) is the run's zero.
 */
export class StatsFiles {
  constructor(dir, t0, { sender = true, receiver = true } = {}) {
    this.t0 = t0;
    this.prev = new Map();
    this.last = new Map();
    this.files = {};
    if (sender) this.files.s = this.open(path.join(dir, 'sender.csv'), SENDER_COLUMNS);
    if (receiver) this.files.r = this.open(path.join(dir, 'receiver.csv'), RECEIVER_COLUMNS);
  }

  open(file, cols) {
    const stream = fs.createWriteStream(file);
    stream.write(`${cols.join(',')}\n`);
    return { stream, cols };
  }

  /** Writes peer.sample()'s ROWS of SIDE ('s' or 'r') taken at NOW (ms since the epoch). */
  write(side, rows, now) {
    for (const r of rows) {
      const key = `${side}${r.flow}`;
      const p = this.prev.get(key);
      const dt = p ? (now - p.at) / 1000 : 0;
      const row = side === 's' ? senderRow(r, p?.r, dt) : receiverRow(r, p?.r, dt);
      Object.assign(row, { t: (now - this.t0) / 1000, epoch: now / 1000 });
      const f = this.files[side];
      f.stream.write(`${csvLine(f.cols, row)}\n`);
      this.prev.set(key, { r, at: now });
      this.last.set(key, r);
    }
  }

  /** The last raw sample of flow F on SIDE. */
  lastOf(side, f) { return this.last.get(`${side}${f}`); }

  async close() {
    await Promise.all(Object.values(this.files).map((f) => new Promise((res) => f.stream.end(res))));
  }
}
