# `cmake --install build/release [--prefix P]`: the programs, the DDL C library, the example
# configurations and a systemd unit for the stream server.
#   P/bin/predrop-server, predrop-client, predrop-load
#   P/lib/libpredrop_ddl_capi.so                 (python/predrop finds it there: _build.py)
#   P/share/predrop/configs/{stream,ddl}.toml, README.md
#   P/lib/systemd/system/predrop-server.service  (ExecStart names the prefix configured at
#                                                cmake time: CMAKE_INSTALL_PREFIX's bin and etc)
#   P/etc/predrop/stream.toml                    (the unit's configuration; kept if present)
include(GNUInstallDirs)
install(TARGETS predrop-server predrop-client predrop-load RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS predrop_ddl_capi LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES configs/stream.toml configs/ddl.toml configs/README.md
        DESTINATION ${CMAKE_INSTALL_DATADIR}/predrop/configs)
configure_file(${PROJECT_SOURCE_DIR}/cmake/predrop-server.service.in
               ${PROJECT_BINARY_DIR}/predrop-server.service @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/predrop-server.service
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/systemd/system)
# The unit's configuration: installed once, never over an operator's edits.
install(CODE "
  set(_etc \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SYSCONFDIR}/predrop\")
  if(NOT EXISTS \"\${_etc}/stream.toml\")
    file(INSTALL \"${PROJECT_SOURCE_DIR}/configs/stream.toml\" DESTINATION \"\${_etc}\")
  endif()
")
