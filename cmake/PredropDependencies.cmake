# Every third-party dependency is found here, once, and exposed as an imported target.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

pkg_check_modules(LIBUV REQUIRED IMPORTED_TARGET libuv)
pkg_check_modules(LIBSRTP2 REQUIRED IMPORTED_TARGET libsrtp2)
pkg_check_modules(LIBAV REQUIRED IMPORTED_TARGET
  libavformat libavcodec libavutil libswscale libavfilter)
pkg_check_modules(TOMLPP REQUIRED IMPORTED_TARGET tomlplusplus)
find_package(CLI11 CONFIG QUIET)
if(NOT CLI11_FOUND)
  # Debian's libcli11-dev is header-only; fall back to the include path.
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
endif()
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(nlohmann_json 3 REQUIRED)
