# The code that drives the libraries: the CLI's own files and the tests'. ORION_DRIVER_OPT
# compiles it at another optimisation level than the libraries. The sanitizer build uses -O0
# (Makefile, configure-sanitize): the tests' and the CLI's files were most of that build's
# compile time at -O1, while the work they check runs in the libraries (docs/RELIABILITY.md,
# "What the build settings are worth").
set(ORION_DRIVER_OPT "" CACHE STRING
    "Optimisation flag of the CLI's and the tests' own files (e.g. -O0); empty: the build type's")

# Applies ORION_DRIVER_OPT to TARGET (call it once the target's libraries are all linked).
# The Orion libraries it uses, directly or through each other, are then linked whole and before
# its own objects: of an inline function that both compile (a std:: helper, a template), the
# linker keeps the first copy it meets, and with the target's objects first the libraries' hot
# loops would call the driver's unoptimised copies.
function(orion_driver_code target)
  if(NOT ORION_DRIVER_OPT)
    return()
  endif()
  if(APPLE)
    message(FATAL_ERROR "ORION_DRIVER_OPT needs a GNU-style linker (--whole-archive)")
  endif()
  target_compile_options(${target} PRIVATE ${ORION_DRIVER_OPT})
  get_target_property(todo ${target} LINK_LIBRARIES)
  set(libraries)
  while(todo)
    list(POP_FRONT todo lib)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" lib "${lib}")
    if(NOT lib MATCHES "^orion_" OR NOT TARGET ${lib})
      continue()
    endif()
    get_target_property(aliased ${lib} ALIASED_TARGET)
    if(aliased)
      set(lib ${aliased})
    endif()
    get_target_property(type ${lib} TYPE)
    if(NOT type STREQUAL "STATIC_LIBRARY" OR lib IN_LIST libraries)
      continue()
    endif()
    list(APPEND libraries ${lib})
    get_target_property(deps ${lib} INTERFACE_LINK_LIBRARIES)
    if(deps)
      list(APPEND todo ${deps})
    endif()
  endwhile()
  set(files)
  foreach(lib ${libraries})
    list(APPEND files $<TARGET_FILE:${lib}>)
  endforeach()
  # Link options come before the objects on CMake's link line; the libraries come again after
  # them, as usual, where nothing is left to take from them.
  target_link_options(${target} PRIVATE "LINKER:--whole-archive" ${files} "LINKER:--no-whole-archive")
endfunction()
