# predrop::net_codec — RTP/RTCP/SDES codecs: pure functions over byte spans, no C library, so that
# fuzzers and offline tools can link them alone. Threading and error contract: see the headers.
add_library(predrop_net_codec
  ${CMAKE_CURRENT_LIST_DIR}/src/rtp.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/rtcp.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/sdes_key.cpp
)
add_library(predrop::net_codec ALIAS predrop_net_codec)
target_include_directories(predrop_net_codec PUBLIC ${CMAKE_CURRENT_LIST_DIR}/include)
target_link_libraries(predrop_net_codec PUBLIC predrop::core PRIVATE predrop_options)
if(PREDROP_FUZZ)
  # predrop_add_fuzzer instruments only the fuzz target's own sources; without coverage
  # instrumentation here libFuzzer would be blind inside the parsers it is meant to explore.
  target_compile_options(predrop_net_codec PRIVATE -fsanitize=fuzzer-no-link)
endif()
