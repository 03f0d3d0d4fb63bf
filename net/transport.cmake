# predrop::net (transport half): libsrtp RAII session, libuv loop/timers/signals, UDP endpoint,
# TCP for RTSP. The only place in the project that includes <uv.h> or <srtp2/srtp.h>; both
# libraries are linked PRIVATE so that no other target sees their headers.
add_library(predrop_net
  ${CMAKE_CURRENT_LIST_DIR}/src/clock.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/socket_address.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/event_loop.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/udp_endpoint.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/tcp.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/srtp_session.cpp
)
add_library(predrop::net ALIAS predrop_net)
target_include_directories(predrop_net PUBLIC ${CMAKE_CURRENT_LIST_DIR}/include)
# predrop::net_codec is public because srtp_session.hpp takes its SrtpSuite and SrtpKeyMaterial.
target_link_libraries(predrop_net
  PUBLIC predrop::core predrop::net_codec
  PRIVATE PkgConfig::LIBSRTP2 PkgConfig::LIBUV predrop_options)
