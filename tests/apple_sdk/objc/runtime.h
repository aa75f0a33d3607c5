#pragma once
// Stand-in for <objc/runtime.h> (with the types of <objc/objc.h>) for the Linux compile-only
// check of the ane bridge: only what the bridge uses, with the SDK's signatures.
typedef struct objc_class* Class;
typedef struct objc_object* id;
typedef struct objc_selector* SEL;
typedef struct objc_method* Method;
#if defined(__arm64__) || defined(__aarch64__)
typedef bool BOOL;  // OBJC_BOOL_IS_BOOL on Apple silicon
#else
typedef signed char BOOL;
#endif

extern "C" {
Class objc_getClass(const char* name);
SEL sel_registerName(const char* str);
Method class_getClassMethod(Class cls, SEL name);
Method class_getInstanceMethod(Class cls, SEL name);
}
