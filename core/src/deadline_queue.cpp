#include "predrop/core/deadline_queue.hpp"

#include <cassert>

namespace predrop::core {

void DeadlineQueue::reserve(std::size_t keys) {
  heap_.reserve(keys);
  if (position_.size() < keys) position_.resize(keys, kAbsent);
}

bool DeadlineQueue::contains(std::uint32_t key) const {
  return key < position_.size() && position_[key] != kAbsent;
}

std::uint64_t DeadlineQueue::due(std::uint32_t key) const {
  return contains(key) ? heap_[position_[key]].due : kNever;
}

void DeadlineQueue::put(std::size_t index, const Node& node) {
  heap_[index] = node;
  position_[node.key] = static_cast<std::uint32_t>(index);
}

void DeadlineQueue::sift_up(std::size_t index) {
  const Node node = heap_[index];
  while (index > 0) {
    const std::size_t parent = (index - 1) / 2;
    if (!before(node, heap_[parent])) break;
    put(index, heap_[parent]);
    index = parent;
  }
  put(index, node);
}

void DeadlineQueue::sift_down(std::size_t index) {
  const Node node = heap_[index];
  const std::size_t n = heap_.size();
  for (;;) {
    std::size_t child = 2 * index + 1;
    if (child >= n) break;
    if (child + 1 < n && before(heap_[child + 1], heap_[child])) ++child;
    if (!before(heap_[child], node)) break;
    put(index, heap_[child]);
    index = child;
  }
  put(index, node);
}

void DeadlineQueue::schedule(std::uint32_t key, std::uint64_t due) {
  if (due == kNever) {
    remove(key);
    return;
  }
  if (key >= position_.size()) position_.resize(static_cast<std::size_t>(key) + 1, kAbsent);
  if (position_[key] == kAbsent) {
    heap_.push_back(Node{due, key});
    position_[key] = static_cast<std::uint32_t>(heap_.size() - 1);
    sift_up(heap_.size() - 1);
    return;
  }
  const std::size_t index = position_[key];
  const std::uint64_t old = heap_[index].due;
  heap_[index].due = due;
  if (due < old) {
    sift_up(index);
  } else if (due > old) {
    sift_down(index);
  }
}

void DeadlineQueue::remove(std::uint32_t key) {
  if (!contains(key)) return;
  const std::size_t index = position_[key];
  position_[key] = kAbsent;
  const Node last = heap_.back();
  heap_.pop_back();
  if (index == heap_.size()) return;  // it was the last node
  put(index, last);
  // The node moved into the hole may belong above or below it.
  if (index > 0 && before(last, heap_[(index - 1) / 2])) {
    sift_up(index);
  } else {
    sift_down(index);
  }
  assert(heap_.empty() || position_[heap_.front().key] == 0);
}

void DeadlineQueue::clear() {
  for (const Node& n : heap_) {
    position_[n.key] = kAbsent;
  }
  heap_.clear();
}

}  // namespace predrop::core
