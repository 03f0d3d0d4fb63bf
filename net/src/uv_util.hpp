#pragma once
// Private helpers shared by the libuv wrappers in net/src. The only header besides the .cpp files
// that includes <uv.h>.
#include <uv.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <string>

#include "predrop/core/result.hpp"
#include "predrop/net/event_loop.hpp"

namespace predrop::net::detail {

/// Offset of the extra storage behind a handle of type H; keeps it aligned for any type.
template <typename H>
constexpr std::size_t handle_extra_offset() {
  constexpr std::size_t a = alignof(std::max_align_t);
  return (sizeof(H) + a - 1) / a * a;
}

/// Allocates a zeroed libuv handle with `extra` bytes behind it, in one block that the close
/// callback frees (close_and_free). Buffers that libuv may still hold while the handle closes
/// (receive slabs) live in the extra bytes, so they outlive the wrapper exactly as long as needed.
template <typename H>
H* alloc_handle(std::size_t extra = 0) {
  const std::size_t total = handle_extra_offset<H>() + extra;
  void* mem = std::calloc(1, total);
  if (mem == nullptr) {
    throw std::bad_alloc();
  }
  return static_cast<H*>(mem);
}

/// The extra storage of a handle made by alloc_handle<H>.
template <typename H>
std::byte* handle_extra(H* handle) {
  return reinterpret_cast<std::byte*>(handle) + handle_extra_offset<H>();
}

/// Stops reading, detaches the handle from its wrapper and closes it; the memory is freed in the
/// close callback. Safe on a handle that is already closing (does nothing).
void close_and_free(uv_handle_t* handle);

/// Frees a handle that was allocated but never initialised with uv_*_init.
inline void free_uninitialised(void* handle) {
  std::free(handle);
}

/// The wrapper that owns `handle`, or nullptr once the wrapper closed or was destroyed.
template <typename Wrapper, typename H>
Wrapper* owner(H* handle) {
  auto* base = static_cast<LoopHandle*>(reinterpret_cast<uv_handle_t*>(handle)->data);
  return static_cast<Wrapper*>(base);
}

/// "what: message (NAME)" for a libuv error code.
inline core::Error uv_error(const std::string& what, int code) {
  return core::make_error(what + ": " + uv_strerror(code) + " (" + uv_err_name(code) + ")");
}

}  // namespace predrop::net::detail
