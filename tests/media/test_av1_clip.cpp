// AV1 from a real encoder (issue 24): a clip made at test time with ffmpeg's libaom-av1 (realtime,
// fast), written as a low-overhead OBU stream (-f obu), is cut into temporal units, each
// packetized per the AOMedia RTP payload format at two payload limits (so that OBUs aggregate
// and fragment) and depacketized; the stream that comes back decodes (libdav1d via ffmpeg) to
// the same pictures as the file, hash for hash. Not wired into MediaFile yet (docs/media.md).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "av1_packetizer.hpp"
#include "media_test_util.hpp"
#include "predrop/media/av1_depacketizer.hpp"

namespace predrop::media {
namespace {

std::string framemd5(const std::string& path, std::string* out) {
  const std::string md5 = path + ".md5";
  EXPECT_EQ(test::run(test::kFfmpeg + " -nostdin -loglevel error -y -f obu -i " + path +
                          " -f framemd5 " + md5,
                      out),
            0)
      << *out;
  std::string hashes;
  std::ifstream in(md5);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    hashes += line.substr(line.rfind(',') + 1) + "\n";
  }
  return hashes;
}

TEST(Av1Clip, LibaomStreamComesBackBitExact) {
  const auto dir = test::scratch_dir();
  const std::string mkv = (dir / "aom.mkv").string();
  const std::string obu = (dir / "aom.obu").string();
  std::string out;
  ASSERT_EQ(test::run(test::kFfmpeg +
                          " -nostdin -loglevel error -y -f lavfi -i testsrc2=s=320x240:r=30:d=2 "
                          "-c:v libaom-av1 -usage realtime -cpu-used 8 -g 30 -b:v 400k " +
                          mkv + " && " + test::kFfmpeg + " -nostdin -loglevel error -y -i " + mkv +
                          " -c copy -f obu " + obu,
                      &out),
            0)
      << out;
  const auto stream = test::read_file(obu);
  // Temporal units: from one temporal delimiter (12 00) to the next, found by walking the OBUs.
  std::vector<detail::Av1Obu> obus;
  ASSERT_TRUE(detail::split_av1_obus(stream, obus));
  std::vector<std::span<const std::uint8_t>> units;
  std::size_t start = 0;
  for (const auto& o : obus) {
    const auto at = static_cast<std::size_t>(o.header.data() - stream.data());
    if (o.type == detail::kAv1TemporalDelimiter && at > start) {
      units.emplace_back(stream.data() + start, at - start);
      start = at;
    }
  }
  units.emplace_back(stream.data() + start, stream.size() - start);
  ASSERT_EQ(units.size(), 60u);

  const std::string want = framemd5(obu, &out);
  ASSERT_FALSE(want.empty());
  for (const std::size_t limit : {1200u, 200u}) {
    std::vector<std::uint8_t> back;
    std::size_t packets = 0;
    std::size_t damaged = 0;
    Av1Depacketizer d([&](const AccessUnit& au) {
      damaged += au.damaged ? 1 : 0;
      back.insert(back.end(), au.data.begin(), au.data.end());
    });
    std::uint16_t sequence = 0;
    for (std::size_t u = 0; u < units.size(); ++u) {
      std::vector<std::vector<std::uint8_t>> payloads;
      ASSERT_TRUE(detail::packetize_av1(
          units[u], u % 30 == 0, limit,
          [&](std::span<const std::uint8_t> p) { payloads.emplace_back(p.begin(), p.end()); }));
      for (std::size_t i = 0; i < payloads.size(); ++i) {
        d.push(sequence++, static_cast<std::uint32_t>(u * 3000), i + 1 == payloads.size(),
               payloads[i]);
      }
      packets += payloads.size();
    }
    d.flush();
    EXPECT_EQ(damaged, 0u);
    const std::string path = (dir / ("back" + std::to_string(limit) + ".obu")).string();
    test::write_file(path, back);
    EXPECT_EQ(framemd5(path, &out), want) << "limit " << limit << ", " << packets << " packets";
    std::printf("limit %zu: %zu packets for %zu bytes, %s\n", limit, packets, stream.size(),
                back == stream ? "bytes identical" : "bytes differ (sizes re-encoded)");
  }
}

}  // namespace
}  // namespace predrop::media
