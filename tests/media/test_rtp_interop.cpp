// Interop: a real ffmpeg receives our RTP packets, described only by an SDP made of our
// StreamInfo pieces, over UDP on loopback. What it decodes must be the reference, frame for frame.
// This is what ffplay does when it plays our stream.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <regex>
#include <thread>

#include "media_test_util.hpp"

namespace predrop::media {
namespace {

using test::kFfmpeg;
using test::kSample;

// A free even UDP port whose successor (RTCP) is free too.
int free_port_pair() {
  for (int attempt = 0; attempt < 50; ++attempt) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
    close(s);
    const int port = ntohs(a.sin_port) & ~1;
    bool ok = true;
    for (int p : {port, port + 1}) {
      int t = socket(AF_INET, SOCK_DGRAM, 0);
      sockaddr_in b{};
      b.sin_family = AF_INET;
      b.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      b.sin_port = htons(static_cast<std::uint16_t>(p));
      ok = ok && bind(t, reinterpret_cast<sockaddr*>(&b), sizeof b) == 0;
      close(t);
    }
    if (ok && port > 1024) return port;
  }
  return -1;
}

// True once some process has bound UDP `port` on 127.0.0.1 (read from /proc/net/udp).
bool udp_port_bound(int port) {
  std::ifstream in("/proc/net/udp");
  std::string line;
  char needle[16];
  std::snprintf(needle, sizeof needle, ":%04X ", port);
  while (std::getline(in, line)) {
    if (line.find(needle) != std::string::npos && line.find(needle) < 20) return true;
  }
  return false;
}

TEST(RtpInterop, FfmpegDecodesOurStreamFromOurSdp) {
  auto opened = MediaFile::open(kSample);
  ASSERT_TRUE(opened) << opened.error().message;
  const MediaFile& file = **opened;
  const auto dir = test::scratch_dir();
  const int video_port = free_port_pair();
  const int audio_port = free_port_pair();
  ASSERT_GT(video_port, 0);
  ASSERT_GT(audio_port, 0);
  ASSERT_NE(video_port, audio_port);

  std::string sdp =
      "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=predrop\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n";
  for (const StreamInfo& s : file.streams()) {
    const int port = s.kind == MediaKind::kVideo ? video_port : audio_port;
    sdp += "m=" + s.media() + " " + std::to_string(port) + " RTP/AVP " +
           std::to_string(s.payload_type) + "\r\n" + s.sdp_attributes();
  }
  const auto sdp_path = dir / "stream.sdp";
  std::ofstream(sdp_path) << sdp;
  const auto y4m = dir / "received.y4m";
  const auto wav = dir / "received.wav";
  const auto pid_file = dir / "ffmpeg.pid";
  std::filesystem::remove(pid_file);

  std::string ffmpeg_output;
  int ffmpeg_status = -1;
  std::thread receiver([&] {
    ffmpeg_status =
        test::run("( " + kFfmpeg + " -nostdin -hide_banner -loglevel warning -protocol_whitelist " +
                      "file,udp,rtp -reorder_queue_size 0 -i " + sdp_path.string() +
                      " -map 0:v -pix_fmt yuv420p -y " + y4m.string() + " -map 0:a -y " +
                      wav.string() + " & echo $! > " + pid_file.string() + "; wait )",
                  &ffmpeg_output);
  });
  // Wait (bounded) until ffmpeg listens, so that no packet goes to a closed port.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!(udp_port_bound(video_port) && udp_port_bound(audio_port)) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(udp_port_bound(video_port)) << "ffmpeg did not listen";

  // Send every packet with a 12-byte RTP header (RFC 3550 §5.1), a random-looking timestamp
  // offset per stream as a session would add, paced by the schedule at 4x speed so that the
  // loopback socket buffers never overflow.
  const int sock = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(sock, 0);
  const std::uint32_t ssrc[2] = {0x11223344, 0x55667788};
  const std::uint32_t offset[2] = {0x12345678, 0x9abcdef0};
  std::uint16_t seq[2] = {1000, 2000};
  std::vector<std::uint8_t> datagram;
  const auto start = std::chrono::steady_clock::now();
  for (const Block& b : file.blocks()) {
    for (const RtpPacket& p : file.packets(b)) {
      const auto due = start + std::chrono::microseconds((b.start_us + p.send_offset_us) / 4);
      std::this_thread::sleep_until(due);
      const StreamInfo& s = file.streams()[p.stream];
      const std::uint32_t ts = p.rtp_timestamp + offset[p.stream];
      const std::uint16_t sq = seq[p.stream]++;
      const std::uint8_t header[12] = {
          0x80,
          static_cast<std::uint8_t>((p.marker ? 0x80 : 0) | s.payload_type),
          static_cast<std::uint8_t>(sq >> 8),
          static_cast<std::uint8_t>(sq),
          static_cast<std::uint8_t>(ts >> 24),
          static_cast<std::uint8_t>(ts >> 16),
          static_cast<std::uint8_t>(ts >> 8),
          static_cast<std::uint8_t>(ts),
          static_cast<std::uint8_t>(ssrc[p.stream] >> 24),
          static_cast<std::uint8_t>(ssrc[p.stream] >> 16),
          static_cast<std::uint8_t>(ssrc[p.stream] >> 8),
          static_cast<std::uint8_t>(ssrc[p.stream]),
      };
      const auto payload = file.payload(p);
      datagram.assign(header, header + 12);
      datagram.insert(datagram.end(), payload.begin(), payload.end());
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      to.sin_port =
          htons(static_cast<std::uint16_t>(s.kind == MediaKind::kVideo ? video_port : audio_port));
      ASSERT_EQ(sendto(sock, datagram.data(), datagram.size(), 0, reinterpret_cast<sockaddr*>(&to),
                       sizeof to),
                static_cast<ssize_t>(datagram.size()));
    }
  }
  close(sock);
  // A receiving ffmpeg never ends on its own (docs/design.md §6): let it drain, then SIGINT.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  pid_t pid = 0;
  std::ifstream(pid_file) >> pid;
  ASSERT_GT(pid, 0);
  kill(pid, SIGINT);
  receiver.join();
  EXPECT_EQ(ffmpeg_status, 0) << ffmpeg_output;

  // Compare what ffmpeg decoded with the reference, frames paired by index, over the frames it
  // wrote (shortest=1: it holds its last frames back).
  const auto stats = dir / "psnr.log";
  std::string out;
  ASSERT_EQ(test::run(kFfmpeg + " -nostdin -hide_banner -i " + y4m.string() + " -i " + kSample +
                          " -lavfi \"[0:v]settb=1/30,setpts=N[a];[1:v]settb=1/30,setpts=N[b];"
                          "[a][b]psnr=shortest=1:stats_file=" +
                          stats.string() + "\" -f null -",
                      &out),
            0)
      << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(average:([0-9.]+|inf))"))) << out;
  std::ifstream stats_in(stats);
  int frames = 0;
  for (std::string line; std::getline(stats_in, line);)
    ++frames;
  std::printf("ffmpeg decoded %d of 180 frames, PSNR vs reference %s dB\n", frames,
              m[1].str().c_str());
  EXPECT_GE(frames, 170);
  EXPECT_EQ(m[1].str(), "inf") << "received frames differ from the reference";
  // About six seconds of 48 kHz stereo 16-bit audio arrived too.
  EXPECT_GT(std::filesystem::file_size(wav), 5u * 48000 * 4);
}

}  // namespace
}  // namespace predrop::media
