#pragma once
// Stand-in for <IOSurface/IOSurfaceRef.h> (with <IOSurface/IOSurfaceTypes.h> and
// kern_return_t from <mach/kern_return.h>) for the Linux compile-only check of the ane bridge:
// only what the bridge uses, with the SDK's signatures.
#include <CoreFoundation/CoreFoundation.h>

#include <stddef.h>
#include <stdint.h>

typedef int kern_return_t;
typedef struct __IOSurface* IOSurfaceRef;
typedef uint32_t IOSurfaceLockOptions;
enum : uint32_t { kIOSurfaceLockReadOnly = 0x00000001 };

extern "C" {
extern const CFStringRef kIOSurfaceAllocSize;
extern const CFStringRef kIOSurfaceWidth;
extern const CFStringRef kIOSurfaceHeight;
extern const CFStringRef kIOSurfaceBytesPerRow;
extern const CFStringRef kIOSurfaceBytesPerElement;
extern const CFStringRef kIOSurfacePixelFormat;

IOSurfaceRef IOSurfaceCreate(CFDictionaryRef properties);
kern_return_t IOSurfaceLock(IOSurfaceRef buffer, IOSurfaceLockOptions options, uint32_t* seed);
kern_return_t IOSurfaceUnlock(IOSurfaceRef buffer, IOSurfaceLockOptions options, uint32_t* seed);
void* IOSurfaceGetBaseAddress(IOSurfaceRef buffer);
size_t IOSurfaceGetAllocSize(IOSurfaceRef buffer);
}
