# Tests of predrop::net_codec (net/codec.cmake). Included from tests/net/CMakeLists.txt.
predrop_add_test(NAME test_rtp SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rtp.cpp
  LIBS predrop::net_codec LABELS unit)
predrop_add_test(NAME test_rtcp SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rtcp.cpp
  LIBS predrop::net_codec LABELS unit)
predrop_add_test(NAME test_sdes_key SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sdes_key.cpp
  LIBS predrop::net_codec LABELS unit)
predrop_add_test(NAME test_codec_no_alloc SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_codec_no_alloc.cpp
  LIBS predrop::net_codec LABELS unit)
