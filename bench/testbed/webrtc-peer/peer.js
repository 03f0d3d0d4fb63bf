// Page side of the bed's WebRTC calls: one RTCPeerConnection per flow, sender or receiver.
// The driver (call.mjs) calls these through CDP and carries the SDP between the two browsers;
// nothing here talks to a network except the calls themselves.
//
// Offer/answer without trickle: each side waits for ICE gathering to finish (host candidates
// only, no STUN/TURN servers, so it takes milliseconds) and hands over a complete description.
'use strict';

const flows = new Map();
let captured = null;

function waitGathered(pc) {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    pc.addEventListener('icegatheringstatechange', () => {
      if (pc.iceGatheringState === 'complete') resolve();
    });
  });
}

function waitConnected(pc, timeoutMs) {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (pc.connectionState === 'connected') resolve();
      else if (pc.connectionState === 'failed' || pc.connectionState === 'closed') {
        reject(new Error(`connection ${pc.connectionState}`));
      }
    };
    pc.addEventListener('connectionstatechange', check);
    setTimeout(() => reject(new Error(`not connected after ${timeoutMs} ms (${pc.connectionState})`)), timeoutMs);
    check();
  });
}

// The fake camera (and microphone) once per page; every flow sends the same capture, each
// through its own encoder.
async function capture(audio) {
  if (!captured) {
    captured = await navigator.mediaDevices.getUserMedia({
      video: { width: 640, height: 360, frameRate: 30 },
      audio: !!audio,
    });
  }
  return captured;
}

// Codec list with the chosen one first and only its RTX kept (no RED/ULPFEC/FlexFEC: predrop has
// no FEC either). MATCH is a mimeType ('video/VP8') optionally with an fmtp fragment.
function preferredCodecs(kind, mime, fmtp) {
  const all = RTCRtpSender.getCapabilities(kind).codecs;
  const chosen = all.filter((c) => c.mimeType.toLowerCase() === mime.toLowerCase() &&
    (!fmtp || (c.sdpFmtpLine || '').includes(fmtp)));
  if (!chosen.length) throw new Error(`codec ${mime} ${fmtp || ''} not supported here`);
  const rtx = all.filter((c) => c.mimeType.toLowerCase() === `${kind}/rtx`);
  return [chosen[0], ...rtx];
}

const peer = {
  /** Capabilities, so that the driver can report what this build negotiates. */
  capabilities() {
    const list = (o) => o.codecs.map((c) => `${c.mimeType} ${c.sdpFmtpLine || ''}`.trim());
    return {
      sendVideo: list(RTCRtpSender.getCapabilities('video')),
      recvVideo: list(RTCRtpReceiver.getCapabilities('video')),
      sendAudio: list(RTCRtpSender.getCapabilities('audio')),
    };
  },

  /**
   * Sender of flow ID: returns the offer SDP. opts: { codec: 'video/VP8', fmtp, audio: bool,
   * maxBitrate (bit/s, video), degradationPreference, contentHint }.
   */
  async offer(id, opts) {
    const pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle', rtcpMuxPolicy: 'require' });
    const stream = await capture(opts.audio);
    const video = stream.getVideoTracks()[0].clone();
    if (opts.contentHint) video.contentHint = opts.contentHint;
    const vt = pc.addTransceiver(video, { direction: 'sendonly', streams: [] });
    vt.setCodecPreferences(preferredCodecs('video', opts.codec || 'video/VP8', opts.fmtp));
    if (opts.audio) pc.addTransceiver(stream.getAudioTracks()[0].clone(), { direction: 'sendonly' });
    const offer = await pc.createOffer();
    await pc.setLocalDescription(offer);
    await waitGathered(pc);
    flows.set(id, { pc, role: 'sender', video: vt.sender, opts });
    return pc.localDescription.sdp;
  },

  /** Sender: applies the answer, waits for the connection, then caps the video encoder. */
  async accept(id, sdp, timeoutMs = 15000) {
    const f = flows.get(id);
    await f.pc.setRemoteDescription({ type: 'answer', sdp });
    await waitConnected(f.pc, timeoutMs);
    const p = f.video.getParameters();
    if (f.opts.maxBitrate) p.encodings[0].maxBitrate = f.opts.maxBitrate;
    if (f.opts.degradationPreference) p.degradationPreference = f.opts.degradationPreference;
    await f.video.setParameters(p);
    const q = f.video.getParameters();
    return { maxBitrate: q.encodings[0].maxBitrate, degradationPreference: q.degradationPreference };
  },

  /** Receiver of flow ID: answers the offer SDP; plays the video muted in a <video>. */
  async answer(id, sdp, opts = {}) {
    const pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle', rtcpMuxPolicy: 'require' });
    const f = { pc, role: 'receiver' };
    flows.set(id, f);
    pc.addEventListener('track', (e) => {
      if (e.track.kind !== 'video' || opts.noVideoElement) return;
      const el = document.createElement('video');
      el.muted = true;
      el.autoplay = true;
      el.playsInline = true;
      el.width = 160;
      el.srcObject = new MediaStream([e.track]);
      document.getElementById('videos').appendChild(el);
      el.play().catch(() => {});
      f.element = el;
    });
    await pc.setRemoteDescription({ type: 'offer', sdp });
    await pc.setLocalDescription(await pc.createAnswer());
    await waitGathered(pc);
    return pc.localDescription.sdp;
  },

  async connected(id, timeoutMs = 15000) {
    await waitConnected(flows.get(id).pc, timeoutMs);
    return true;
  },

  /** Stops flow ID's sending (pause) or resumes it: the RFC 8867 §5.8 pause/resume case. */
  async pause(id, paused) {
    const f = flows.get(id);
    for (const s of f.pc.getSenders()) if (s.track) s.track.enabled = !paused;
    const p = f.video.getParameters();
    p.encodings[0].active = !paused;
    await f.video.setParameters(p);
    return true;
  },

  /**
   * One row per flow of this page: the getStats fields the bed records (cumulative counters;
   * the driver takes differences). Video only, audio bytes summed apart.
   */
  async sample() {
    const rows = [];
    for (const [id, f] of flows) {
      const r = { flow: id, role: f.role, state: f.pc.connectionState };
      const stats = await f.pc.getStats();
      const byId = new Map();
      stats.forEach((s) => byId.set(s.id, s));
      stats.forEach((s) => {
        if (s.type === 'transport' && s.selectedCandidatePairId) {
          const cp = byId.get(s.selectedCandidatePairId);
          if (cp) {
            r.available_outgoing_bitrate = cp.availableOutgoingBitrate;
            r.available_incoming_bitrate = cp.availableIncomingBitrate;
            r.rtt_ms = cp.currentRoundTripTime !== undefined ? cp.currentRoundTripTime * 1000 : undefined;
            const lc = byId.get(cp.localCandidateId);
            const rc = byId.get(cp.remoteCandidateId);
            if (lc && rc) r.tuple = `${lc.protocol} ${lc.address}:${lc.port} ${rc.address}:${rc.port}`;
          }
          r.transport_bytes_sent = s.bytesSent;
          r.transport_bytes_received = s.bytesReceived;
        } else if (s.type === 'outbound-rtp' && s.kind === 'video') {
          Object.assign(r, {
            target_bitrate: s.targetBitrate, bytes_sent: s.bytesSent, header_bytes_sent: s.headerBytesSent,
            packets_sent: s.packetsSent, retransmitted_bytes_sent: s.retransmittedBytesSent,
            frames_encoded: s.framesEncoded, frames_sent: s.framesSent, key_frames_encoded: s.keyFramesEncoded,
            qp_sum: s.qpSum, frame_width: s.frameWidth, frame_height: s.frameHeight,
            frames_per_second: s.framesPerSecond, quality_limitation_reason: s.qualityLimitationReason,
            nack_count: s.nackCount, pli_count: s.pliCount, encoder: s.encoderImplementation,
            total_encode_time: s.totalEncodeTime, total_packet_send_delay: s.totalPacketSendDelay,
          });
          const codec = byId.get(s.codecId);
          if (codec) r.codec = codec.mimeType;
        } else if (s.type === 'remote-inbound-rtp' && s.kind === 'video') {
          Object.assign(r, {
            remote_packets_lost: s.packetsLost, remote_fraction_lost: s.fractionLost,
            remote_rtt_ms: s.roundTripTime !== undefined ? s.roundTripTime * 1000 : undefined,
          });
        } else if (s.type === 'inbound-rtp' && s.kind === 'video') {
          Object.assign(r, {
            bytes_received: s.bytesReceived, header_bytes_received: s.headerBytesReceived,
            packets_received: s.packetsReceived, packets_lost: s.packetsLost,
            frames_received: s.framesReceived, frames_decoded: s.framesDecoded, frames_dropped: s.framesDropped,
            key_frames_decoded: s.keyFramesDecoded, freeze_count: s.freezeCount,
            total_freezes_duration: s.totalFreezesDuration, jitter_buffer_delay: s.jitterBufferDelay,
            jitter_buffer_emitted_count: s.jitterBufferEmittedCount, qp_sum: s.qpSum,
            frame_width: s.frameWidth, frame_height: s.frameHeight, frames_per_second: s.framesPerSecond,
            nack_count: s.nackCount, pli_count: s.pliCount, jitter_ms: s.jitter !== undefined ? s.jitter * 1000 : undefined,
            total_decode_time: s.totalDecodeTime, decoder: s.decoderImplementation,
          });
          const codec = byId.get(s.codecId);
          if (codec) r.codec = codec.mimeType;
        } else if (s.type === 'media-source' && s.kind === 'video') {
          r.source_frames = s.frames;
        } else if (s.type === 'outbound-rtp' && s.kind === 'audio') {
          r.audio_bytes_sent = s.bytesSent;
        } else if (s.type === 'inbound-rtp' && s.kind === 'audio') {
          r.audio_bytes_received = s.bytesReceived;
          r.audio_packets_lost = s.packetsLost;
        }
      });
      rows.push(r);
    }
    return rows;
  },

  close(id) {
    const f = flows.get(id);
    if (f) f.pc.close();
    flows.delete(id);
    return true;
  },
};
window.peer = peer;
