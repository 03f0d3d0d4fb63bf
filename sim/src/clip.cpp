#include "predrop/sim/clip.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "predrop/core/discard_planner.hpp"

namespace predrop::sim {

double Clip::mean_rate_bps() const {
  double bytes = 0;
  double us = 0;
  for (const auto& b : blocks) {
    bytes += static_cast<double>(b.bytes);
    us += static_cast<double>(b.duration_us);
  }
  return us > 0 ? bytes * 8e6 / us : 0.0;
}

void finish_block(ClipBlock& block) {
  block.importance.clear();
  block.bytes = 0;
  std::uint32_t frames = 0;
  for (const auto& p : block.packets) {
    block.importance.push_back(p.importance);
    block.bytes += p.bytes;
    frames = std::max(frames, p.frame + 1);
  }
  block.frames = frames;
}

namespace {
// The media's importance scheme (media/src/importance.hpp): key frames highest, reference frames
// by GOP position (later = lower), disposable frames lowest in van der Corput order.
std::uint32_t bit_reverse_rank(std::uint32_t j, std::uint32_t m) {
  std::uint32_t bits = 0;
  while ((1u << bits) < m) {
    ++bits;
  }
  std::uint32_t r = 0;
  for (std::uint32_t b = 0; b < bits; ++b) {
    if (j & (1u << b)) r |= 1u << (bits - 1 - b);
  }
  return r;
}
}  // namespace

Clip make_synthetic_clip(const SyntheticClip& spec) {
  Clip clip;
  constexpr int kFps = 30;
  constexpr SimTime kFrameUs = 1'000'000 / kFps;
  for (std::uint32_t bi = 0; bi < spec.blocks; ++bi) {
    const double s = spec.scale.empty() ? 1.0 : spec.scale[bi % spec.scale.size()];
    ClipBlock b;
    b.duration_us = kFps * kFrameUs;
    // Send (decode) order of one GOP: I, then (P, B, B) groups: P_k before the two B that precede
    // it in display order.
    struct F {
      char type;
      int ref_pos;
    };
    std::vector<F> order{{'I', 0}};
    int refs = 1;
    int bframes = 0;
    while (static_cast<int>(order.size()) < kFps) {
      order.push_back({'P', refs++});
      for (int k = 0; k < 2 && static_cast<int>(order.size()) < kFps; ++k) {
        order.push_back({'B', bframes++});
      }
    }
    std::uint32_t frame = 0;
    std::vector<std::pair<SimTime, ClipPacket>> audio;
    for (std::size_t f = 0; f < order.size(); ++f, ++frame) {
      const F& fr = order[f];
      const double bytes = (fr.type == 'I'   ? spec.key_bytes
                            : fr.type == 'P' ? spec.p_bytes
                                             : spec.b_bytes) *
                           s;
      const auto n = static_cast<std::uint32_t>(std::max(1.0, std::ceil(bytes / spec.max_payload)));
      std::uint8_t imp = 0;
      if (fr.type == 'I') {
        imp = 250;
      } else if (fr.type == 'P') {
        imp = static_cast<std::uint8_t>(200 - fr.ref_pos);
      } else {
        imp = static_cast<std::uint8_t>(1 + bit_reverse_rank(static_cast<std::uint32_t>(fr.ref_pos),
                                                             static_cast<std::uint32_t>(bframes)));
      }
      // A frame's packets are spread over half the gap to the next frame (docs/media.md).
      for (std::uint32_t k = 0; k < n; ++k) {
        ClipPacket p;
        p.offset_us = static_cast<SimTime>(f) * kFrameUs + k * (kFrameUs / 2) / n;
        p.bytes = static_cast<std::uint32_t>(bytes / n) + spec.overhead;
        p.importance = imp;
        p.frame = frame;
        p.video = true;
        p.reference = fr.type != 'B';
        p.key = fr.type == 'I';
        b.packets.push_back(p);
      }
    }
    for (SimTime t = 0; t < b.duration_us; t += 20'000) {
      ClipPacket a;
      a.offset_us = t;
      a.bytes = spec.audio_bytes + spec.overhead;
      a.importance = core::kNeverDrop;
      a.frame = frame++;
      a.video = false;
      b.packets.push_back(a);
    }
    std::stable_sort(
        b.packets.begin(), b.packets.end(),
        [](const ClipPacket& x, const ClipPacket& y) { return x.offset_us < y.offset_us; });
    finish_block(b);
    clip.blocks.push_back(std::move(b));
  }
  return clip;
}

core::Result<Clip> load_clip_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) return core::make_error("cannot open clip table " + path);
  std::string line;
  std::getline(in, line);  // header
  Clip clip;
  std::size_t n = 1;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    unsigned long long block = 0, duration = 0, offset = 0, bytes = 0, imp = 0, frame = 0;
    int video = 0, reference = 0, key = 0;
    if (std::sscanf(line.c_str(), "%llu,%llu,%llu,%llu,%llu,%llu,%d,%d,%d", &block, &duration,
                    &offset, &bytes, &imp, &frame, &video, &reference, &key) != 9 ||
        imp > 255 || block > 1'000'000) {
      return core::make_error(path + ":" + std::to_string(n) + ": bad clip table row");
    }
    while (clip.blocks.size() <= block) {
      clip.blocks.emplace_back();
    }
    ClipBlock& b = clip.blocks[block];
    b.duration_us = static_cast<SimTime>(duration);
    ClipPacket p;
    p.offset_us = static_cast<SimTime>(offset);
    p.bytes = static_cast<std::uint32_t>(bytes);
    p.importance = static_cast<std::uint8_t>(imp);
    p.frame = static_cast<std::uint32_t>(frame);
    p.video = video != 0;
    p.reference = reference != 0;
    p.key = key != 0;
    b.packets.push_back(p);
  }
  for (auto& b : clip.blocks) {
    finish_block(b);
  }
  if (clip.blocks.empty()) return core::make_error(path + ": no packets");
  return clip;
}

core::Status save_clip_table(const Clip& clip, const std::string& path) {
  std::ofstream out(path);
  if (!out) return core::make_error("cannot write " + path);
  out << "block,duration_us,offset_us,bytes,importance,frame,video,reference,key\n";
  for (std::size_t i = 0; i < clip.blocks.size(); ++i) {
    for (const auto& p : clip.blocks[i].packets) {
      out << i << ',' << clip.blocks[i].duration_us << ',' << p.offset_us << ',' << p.bytes << ','
          << static_cast<int>(p.importance) << ',' << p.frame << ',' << (p.video ? 1 : 0) << ','
          << (p.reference ? 1 : 0) << ',' << (p.key ? 1 : 0) << '\n';
    }
  }
  return core::Ok{};
}

}  // namespace predrop::sim
