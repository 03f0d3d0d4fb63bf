# `cmake --install build/release [--prefix P]` and the .deb (cmake/PredropPackage.cmake):
#   P/bin/predrop-server, predrop-client, predrop-load, predrop-ddl-worker, predrop-ddl-job
#   P/lib/libpredrop_ddl_capi.so                 (python/predrop finds it there: _build.py;
#                                                under /usr in lib/<multiarch>/)
#   P/share/predrop/configs/{stream,ddl}.toml, README.md
#   P/share/doc/predrop/README.md, docs/*.md, the OpenAPI file, deploy/ (Grafana, Prometheus)
#   P/lib/systemd/system/predrop-server.service  (ExecStart names P/bin and ETC/predrop)
#   ETC/predrop/stream.toml                      (the unit's configuration; kept if present)
# ETC is /etc when P is /usr (the package), else P/etc. Both are decided at install time, so the
# same build installs into /usr/local, into a --prefix, and into the package.
include(GNUInstallDirs)
# `make install` and cpack install what is built and build nothing first (by default they would
# build every target, tests and benchmarks included): build, then install or package.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
install(TARGETS predrop-server predrop-client predrop-load predrop-ddl-worker predrop-ddl-job
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS predrop_ddl_capi LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES configs/stream.toml configs/ddl.toml configs/README.md
        DESTINATION ${CMAKE_INSTALL_DATADIR}/predrop/configs)
install(FILES README.md docs/control-api.openapi.yaml DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md"
        PATTERN "HELPERS.md" EXCLUDE)
install(DIRECTORY deploy/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/deploy)
# The unit and its configuration, placed by the prefix the install runs with (not the one
# configured): systemd's unit directory is lib/systemd/system (never lib/<multiarch>), and the
# configuration is installed once, never over an operator's edits. (file(INSTALL) puts DESTDIR
# before an absolute DESTINATION itself; the EXISTS check must add it.)
install(CODE "
  set(_prefix \"\${CMAKE_INSTALL_PREFIX}\")
  if(_prefix STREQUAL \"/usr\")
    set(_etc /etc)
  else()
    set(_etc \"\${_prefix}/etc\")
  endif()
  set(CMAKE_INSTALL_FULL_BINDIR \"\${_prefix}/bin\")
  set(CMAKE_INSTALL_FULL_SYSCONFDIR \"\${_etc}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/predrop-server.service.in\"
                 \"${PROJECT_BINARY_DIR}/install-time/predrop-server.service\" @ONLY)
  file(INSTALL \"${PROJECT_BINARY_DIR}/install-time/predrop-server.service\"
       DESTINATION \"\${_prefix}/lib/systemd/system\")
  if(NOT EXISTS \"\$ENV{DESTDIR}\${_etc}/predrop/stream.toml\")
    file(INSTALL \"${PROJECT_SOURCE_DIR}/configs/stream.toml\" DESTINATION \"\${_etc}/predrop\")
  endif()
")
# The predrop Python package (the DDL relay as a PyTorch DDP communication hook; docs/ddl-torch.md)
# is not installed by CMake: pure Python (ctypes, no extension module), it installs offline with
# Debian's python3 and its setuptools, into a venv that sees Debian's torch:
#   /usr/bin/python3 -m venv --system-site-packages /opt/predrop-venv
#   /opt/predrop-venv/bin/pip install --no-deps --no-build-isolation ./python
# It finds libpredrop_ddl_capi.so and predrop-server where `cmake --install` or the package puts
# them (or the repository's build folder, or PREDROP_DDL_CAPI / PREDROP_SERVER):
# python/predrop/_build.py.
