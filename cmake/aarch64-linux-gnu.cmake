# The arm64 cross build (make test-arm64, docs/PLATFORMS.md): Debian's aarch64 GCC, the arm64
# libraries of Debian's multiarch (scripts/setup.sh --arm64), and qemu-user to run what it builds,
# tests included (CTest and gtest_discover_tests go through CMAKE_CROSSCOMPILING_EMULATOR).
# ORION_ARM64_SYSROOT is the folder setup.sh unpacked SentencePiece's arm64 packages into.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Multiarch puts the arm64 dynamic loader and libraries in the host's own /lib and /usr/lib, so
# qemu needs no -L.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
# Only arm64 package configs (and the architecture-independent ones), never the host's.
set(ENV{PKG_CONFIG_LIBDIR} "${ORION_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(CMAKE_FIND_ROOT_PATH / ${ORION_ARM64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ORION_ARM64_SYSROOT)
