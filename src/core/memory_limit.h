#pragma once
// Refusing work whose declared sizes cannot fit in memory, before allocating anything: a config
// or header that asks for terabytes gets a message, not an OOM kill halfway through.
//
// The limit is the machine's physical memory (MemTotal), not MemAvailable: the page cache that
// MemAvailable leaves out holds, among others, the very weight files a model maps, and a model
// that fits once the cache is dropped must not be refused. $ORION_MEMORY_LIMIT (bytes, with an
// optional K, M, G or T suffix, powers of 1024) replaces it, for tests and for users who want a
// lower ceiling.
#include <cstdint>
#include <string_view>

namespace orion {

// The limit in bytes: $ORION_MEMORY_LIMIT if set, else the physical memory. Throws orion::Error
// naming the variable when it is set but not a size.
std::uint64_t memory_limit_bytes();

// Throws orion::Error "WHERE: needs N GB of memory for WHAT, more than the N GB this machine has
// (...)" when `bytes` exceeds memory_limit_bytes().
void check_fits_in_memory(std::uint64_t bytes, std::string_view what, std::string_view where);

}  // namespace orion
