# Tests of the transport half of predrop::net (net/transport.cmake). Socket tests use real
# loopback sockets and a real libuv loop, hence the "integration" label; each binary is its own
# ctest entry with a timeout.
predrop_add_test(NAME net_srtp_session_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_srtp_session.cpp
  LIBS predrop::net TIMEOUT 60 LABELS unit)
predrop_add_test(NAME net_event_loop_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_event_loop.cpp
  LIBS predrop::net TIMEOUT 30 LABELS unit)
predrop_add_test(NAME net_udp_endpoint_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_udp_endpoint.cpp
  LIBS predrop::net TIMEOUT 30 LABELS integration)
predrop_add_test(NAME net_tcp_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tcp.cpp
  LIBS predrop::net TIMEOUT 30 LABELS integration)
