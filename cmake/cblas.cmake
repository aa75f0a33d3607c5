# A cblas for exec/cpu/gemm.cpp's cblas path, as the target orion_cblas when one is found:
# Apple's Accelerate on macOS; on Linux OpenBLAS's pthread build, under its own folder in
# Debian (its OpenMP build would bring a second OpenMP runtime beside GCC's).
if(TARGET orion_cblas)
  return()
endif()
if(APPLE)
  find_library(ACCELERATE_FRAMEWORK Accelerate)
  if(ACCELERATE_FRAMEWORK)
    add_library(orion_cblas INTERFACE)
    target_link_libraries(orion_cblas INTERFACE ${ACCELERATE_FRAMEWORK})
    # The cblas declarations of macOS 13.3 and later (the older ones are deprecated).
    target_compile_definitions(orion_cblas INTERFACE ACCELERATE_NEW_LAPACK)
  endif()
else()
  set(orion_blas_dir /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE})
  find_path(OPENBLAS_INCLUDE_DIR cblas.h PATHS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-pthread NO_DEFAULT_PATH)
  find_library(OPENBLAS_LIBRARY openblas PATHS ${orion_blas_dir}/openblas-pthread NO_DEFAULT_PATH)
  if(OPENBLAS_INCLUDE_DIR AND OPENBLAS_LIBRARY)
    add_library(orion_cblas INTERFACE)
    target_include_directories(orion_cblas SYSTEM INTERFACE ${OPENBLAS_INCLUDE_DIR})
    target_link_libraries(orion_cblas INTERFACE ${OPENBLAS_LIBRARY})
  endif()
endif()
