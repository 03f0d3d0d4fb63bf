# predrop::chain — the packet chains built from core + net pieces, shared by streaming and DDL:
# StageTransmitter (discard -> header -> SRTP -> sendmmsg), StageReceiver (SRTP -> parse ->
# stage accounting) and the PDFB feedback mapping.
add_library(predrop_chain
  ${CMAKE_CURRENT_LIST_DIR}/src/stage_transmitter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/stage_receiver.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/feedback.cpp
)
add_library(predrop::chain ALIAS predrop_chain)
target_include_directories(predrop_chain PUBLIC ${CMAKE_CURRENT_LIST_DIR}/include)
target_link_libraries(predrop_chain PUBLIC predrop::net predrop::core PRIVATE predrop_options)
