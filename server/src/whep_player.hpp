#pragma once
// The WHEP player page and its script (plain JS, no framework, nothing vendored): a recvonly
// video and a recvonly audio transceiver (the server answers the audio when the file has Opus,
// docs/webrtc.md "Audio"), the offer POSTed to ./whep without trickle (the server is ICE-lite
// and needs no candidates of the browser), the answer applied, both tracks in one element shown
// muted (autoplay without a gesture; the audio is decoded all the same), the session DELETEd when
// the page goes. window.predrop exposes the connection, a getStats() summary and the quality
// per second of play (`quality`, docs/webrtc.md "Quality in the page") for tests
// (tests/integration/webrtc_chromium.mjs).
#include <string_view>

namespace predrop::server::detail {

inline constexpr std::string_view kWhepPlayerHtml = R"html(<!doctype html>
<html><head><meta charset="utf-8"><title>predrop WHEP player</title></head>
<body style="margin:0;background:#111;color:#ddd;font:14px sans-serif">
<video id="video" autoplay muted playsinline style="width:100%;max-height:90vh"></video>
<div id="state" style="padding:4px">starting</div>
<script src="player.js"></script>
</body></html>
)html";

inline constexpr std::string_view kWhepPlayerJs = R"js('use strict';
(async () => {
  const state = document.getElementById('state');
  const video = document.getElementById('video');
  const show = (t) => { state.textContent = t; };
  const base = location.pathname.replace(/[^/]*$/, '');
  const pc = new RTCPeerConnection();
  const me = { pc, session: null, error: null, events: [] };
  window.predrop = me;
  pc.addTransceiver('video', { direction: 'recvonly' });
  pc.addTransceiver('audio', { direction: 'recvonly' });
  const shown = new MediaStream();
  // The RTP timestamp of the last video frame presented (requestVideoFrameCallback): what
  // names the blocks each second of quality was about (docs/webrtc.md "Quality in the page").
  me.rtp = null;
  const presented = (now, m) => {
    if (typeof m.rtpTimestamp === 'number') me.rtp = m.rtpTimestamp;
    video.requestVideoFrameCallback(presented);
  };
  pc.ontrack = (e) => {
    shown.addTrack(e.track);
    if (video.srcObject !== shown) video.srcObject = shown;
    video.play().catch(() => {});
    if (e.track.kind === 'video' && video.requestVideoFrameCallback) {
      video.requestVideoFrameCallback(presented);
    }
  };
  pc.oniceconnectionstatechange = () => me.events.push('ice:' + pc.iceConnectionState);
  pc.onconnectionstatechange = () => me.events.push('pc:' + pc.connectionState);
  me.stats = async () => {
    const out = { framesDecoded: 0, framesDropped: 0, freezeCount: 0, totalFreezesDuration: 0,
                  packetsReceived: 0, packetsLost: 0, nackCount: 0, pliCount: 0, firCount: 0,
                  retransmittedPacketsReceived: 0, codec: '', ice: pc.iceConnectionState,
                  dtls: '', connection: pc.connectionState,
                  audio: { packetsReceived: 0, packetsLost: 0, totalSamplesReceived: 0,
                           concealedSamples: 0, silentConcealedSamples: 0, concealmentEvents: 0,
                           codec: '' } };
    const report = await pc.getStats();
    report.forEach((s) => {
      if (s.type === 'inbound-rtp' && s.kind === 'video') {
        for (const k of ['framesDecoded', 'framesDropped', 'freezeCount', 'totalFreezesDuration',
                         'packetsReceived', 'packetsLost', 'nackCount', 'pliCount', 'firCount',
                         'retransmittedPacketsReceived']) out[k] = s[k] || 0;
        const c = s.codecId && report.get(s.codecId);
        if (c) out.codec = c.mimeType + (c.sdpFmtpLine ? ' ' + c.sdpFmtpLine : '');
      }
      if (s.type === 'inbound-rtp' && s.kind === 'audio') {
        for (const k of Object.keys(out.audio)) if (k !== 'codec') out.audio[k] = s[k] || 0;
        const c = s.codecId && report.get(s.codecId);
        if (c) out.audio.codec = c.mimeType;
      }
      if (s.type === 'transport') out.dtls = s.dtlsState;
    });
    return out;
  };
  try {
    await pc.setLocalDescription(await pc.createOffer());
    const r = await fetch(base + 'whep', {
      method: 'POST', headers: { 'Content-Type': 'application/sdp' }, body: pc.localDescription.sdp });
    if (r.status !== 201) throw new Error('WHEP POST: ' + r.status + ' ' + (await r.text()));
    me.session = r.headers.get('Location');
    const answer = await r.text();
    me.frameRate = Number((/a=framerate:([0-9.]+)/.exec(answer) || [])[1] || 0);
    await pc.setRemoteDescription({ type: 'answer', sdp: answer });
  } catch (e) {
    me.error = String(e);
    show(me.error);
    return;
  }
  addEventListener('pagehide', () => {
    if (me.session) fetch(me.session, { method: 'DELETE', keepalive: true });
  });
  // Quality seen by the viewer, per second of play (docs/webrtc.md "Quality in the page"): the
  // getStats() counters' growth over the second, and P = the share of the file's pictures
  // decoded (against the answer's a=framerate) times the share of the second not frozen
  // (Chromium counts a freeze when a frame comes later than max(3 x the mean frame interval,
  // mean + 150 ms)). The last 600 seconds are kept, and each is posted to the session
  // (./whep/<session>/quality) with the RTP timestamps of the last frame presented at its start
  // and at its end: the server gives each block the P of the seconds that played it.
  me.quality = [];
  let last = null;
  setInterval(async () => {
    const s = await me.stats();
    s.at = performance.now();
    s.rtp = me.rtp;
    if (last && s.connection === 'connected' && me.frameRate > 0) {
      const ms = s.at - last.at;
      const freezeMs = 1000 * (s.totalFreezesDuration - last.totalFreezesDuration);
      const a = s.audio.totalSamplesReceived - last.audio.totalSamplesReceived;
      me.quality.push({
        t_ms: Math.round(s.at), interval_ms: Math.round(ms),
        frames_decoded: s.framesDecoded - last.framesDecoded,
        frames_dropped: s.framesDropped - last.framesDropped,
        freezes: s.freezeCount - last.freezeCount, freeze_ms: Math.round(freezeMs),
        p: Math.max(0, Math.min(1, (s.framesDecoded - last.framesDecoded) /
                                      (me.frameRate * ms / 1000)) * (1 - freezeMs / ms)),
        audio_concealed: a > 0 ? (s.audio.concealedSamples - last.audio.concealedSamples) / a : null,
        rtp_from: last.rtp, rtp_to: s.rtp,
      });
      if (me.quality.length > 600) me.quality.shift();
      const q = me.quality[me.quality.length - 1];
      if (me.session) {
        fetch(me.session + '/quality', { method: 'POST', headers: { 'Content-Type': 'text/plain' },
          body: `p=${q.p.toFixed(4)}&decoded=${q.frames_decoded}&dropped=${q.frames_dropped}` +
                `&freezes=${q.freezes}&freeze_ms=${q.freeze_ms}` +
                (q.rtp_from !== null && q.rtp_to !== null
                  ? `&rtp_from=${q.rtp_from}&rtp_to=${q.rtp_to}` : '') }).catch(() => {});
      }
    }
    last = s;
    const q = me.quality[me.quality.length - 1];
    show(`${s.connection} | ${s.codec} | frames decoded ${s.framesDecoded}, dropped ` +
         `${s.framesDropped}, freezes ${s.freezeCount} (${s.totalFreezesDuration.toFixed(1)} s)` +
         (q ? ` | P ${q.p.toFixed(2)}` : '') +
         (s.audio.codec ? ` | ${s.audio.codec} ${s.audio.packetsReceived} packets` : ' | no audio'));
  }, 1000);
})();
)js";

}  // namespace predrop::server::detail
