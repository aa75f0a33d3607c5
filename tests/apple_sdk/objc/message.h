#pragma once
// Stand-in for <objc/message.h> for the Linux compile-only check of the ane bridge. The SDK
// declares objc_msgSend without a prototype (OBJC_OLD_DISPATCH_PROTOTYPES=0): every call must
// cast it to the exact function type of the method it sends, which is what the check enforces.
#include <objc/runtime.h>

extern "C" void objc_msgSend(void);
