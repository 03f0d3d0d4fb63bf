# The .deb: `cpack -G DEB` in a build folder (after building the installed targets) writes
# predrop_<version>_<arch>.deb from the install rules (cmake/PredropInstall.cmake) under /usr,
# with /etc/predrop/stream.toml as a conffile and Depends computed by dpkg-shlibdeps from the
# binaries. Tested by tests/package/deb_install.sh (ctest package_deb).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME predrop)
set(CPACK_PACKAGE_VENDOR predrop)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "predrop maintainers <predrop@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "adaptive pre-discard streaming server (RTSP/RTP/SRTP) and DDL gradient relay")
set(CPACK_PACKAGE_DESCRIPTION
    "predrop-server streams H.264/H.265/VP8/VP9/AV1 over RTSP and discards a controlled fraction \
of each block's packets before they reach the network, chosen from the receivers' reports; \
predrop-client measures and reports; predrop-load loads a server; predrop-ddl-worker and \
predrop-ddl-job train through the relay (predrop-server --mode ddl). A systemd unit \
(predrop-server.service) reads /etc/predrop/stream.toml.")
set(CPACK_PACKAGE_HOMEPAGE_URL "https://example.invalid/predrop")
# Absolute paths at install time (/etc, the unit's ExecStart): stage under DESTDIR with the
# real prefix instead of a prefix inside the staging folder.
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)  # the prefix the install rules see under DESTDIR
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION video)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch, python3-numpy, ffmpeg")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/cmake/deb/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
