# Compiler flags shared by every predrop target.
add_library(predrop_options INTERFACE)
target_compile_options(predrop_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
  -Wno-missing-field-initializers)

if(PREDROP_SANITIZE)
  string(REPLACE ";" "," _san "${PREDROP_SANITIZE}")
  add_compile_options(-fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${_san})
endif()

# With PREDROP_FUZZ every library is built with coverage instrumentation, so that libFuzzer sees
# inside the parsers it drives, not only inside the fuzz target's own file.
if(PREDROP_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
