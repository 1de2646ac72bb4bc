// The atomics are static inline in the header; this file holds the thread sanitizer's annotations
// (compiled with the package's sanitizer flags, so they are real only under `--sanitize=thread`).
#include "CSwitchboardAtomics.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SB_TSAN 1
#endif
#endif

#ifdef SB_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#endif

void sb_tsan_release(const void *address) {
#ifdef SB_TSAN
    __tsan_release((void *)address);
#else
    (void)address;
#endif
}

void sb_tsan_acquire(const void *address) {
#ifdef SB_TSAN
    __tsan_acquire((void *)address);
#else
    (void)address;
#endif
}
