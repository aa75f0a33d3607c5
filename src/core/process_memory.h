#pragma once
// This process's memory as the OS counts it, for the figures generate and bench print. Mapped
// file pages that were touched count as resident, like allocated ones.
namespace orion {

// Resident set size now, in MB (10^6 bytes); 0 where /proc is not available.
double resident_mb();
// The peak resident set size so far (VmHWM), in MB; 0 where /proc is not available.
double peak_resident_mb();

}  // namespace orion
