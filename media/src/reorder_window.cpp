// A window that puts RTP packets back in sequence order; see reorder_window.hpp.
#include "reorder_window.hpp"

namespace predrop::media::detail {

ReorderWindow::ReorderWindow(std::size_t hold_packets, std::size_t max_payload)
    : hold_packets_(std::clamp<std::size_t>(hold_packets, 1, kSlots - 1)),
      max_payload_(max_payload) {
  for (Slot& s : slots_) {
    s.bytes.resize(max_payload_);
  }
}

void ReorderWindow::reset() {
  for (Slot& s : slots_) {
    s.used = false;
  }
  held_ = 0;
  have_next_ = false;
}

}  // namespace predrop::media::detail
