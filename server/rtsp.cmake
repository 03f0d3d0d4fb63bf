# predrop::server_proto — the pure (I/O-free) protocol and configuration pieces of the server:
# RTSP 1.0 messages and header values, SDP, and the TOML configuration. Fuzzers and the RTSP test
# client link this without libuv, libsrtp or FFmpeg. Included from server/CMakeLists.txt.
add_library(predrop_server_proto
  ${CMAKE_CURRENT_LIST_DIR}/src/rtsp_message.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/rtsp_headers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/rtsp_transport.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/sdp.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/config.cpp
)
add_library(predrop::server_proto ALIAS predrop_server_proto)
target_include_directories(predrop_server_proto PUBLIC ${CMAKE_CURRENT_LIST_DIR}/include)
target_link_libraries(predrop_server_proto
  PUBLIC predrop::core
  PRIVATE predrop_options PkgConfig::TOMLPP)
