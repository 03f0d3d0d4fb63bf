#pragma once
// What a stream session's configuration (StreamSessionConfig) and its source's streams make of
// the session's chain, once, when the session is made: the transmitter's tracks (with the
// PictureID field VP8/VP9 renumber, chain/picture_id.hpp) and CNAME, the intake's tracks and
// modes, which source stream goes out on which track, the video track whose RTP timestamps the
// player page reports, and the link bytes each packet adds. StreamSession builds its
// transmitter, intake and SRTP sessions from it (stream_session.cpp).
//
// Errors: set-up time only, so an exception for a configuration the source cannot serve.
// Pure: no socket, no clock, no key material is used beyond copying it into the intake.
#include <cstddef>
#include <span>
#include <vector>

#include "predrop/chain/feedback_intake.hpp"
#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/server/stream_session.hpp"

namespace predrop::server::detail {

/// The chain settings of one session.
struct SessionChain {
  chain::TransmitterConfig transmitter;
  chain::IntakeConfig intake;
  /// Source stream -> track index; -1: the client did not set the stream up.
  std::vector<int> track_of_stream;
  /// Some source stream is not set up: each block's packets are picked (block_packets.hpp).
  bool filter_streams = false;
  /// The first video track (0 without video): the page reports the RTP timestamps of the video
  /// it presents.
  std::size_t page_track = 0;
  /// Link bytes a packet adds to its payload: the RTP header with its extensions, the SRTP tag
  /// and core::kLinkOverheadBytes (the unit of the capacity policy and of PDFB v1.1's counts).
  std::size_t packet_overhead = 0;
};

/// The chain settings of a session with `config` over a source with `streams`. Throws
/// std::runtime_error for more than media::kMaxSourceStreams tracks or a track for a stream the
/// source does not have.
SessionChain session_chain(const StreamSessionConfig& config,
                           std::span<const media::StreamInfo> streams);

}  // namespace predrop::server::detail
