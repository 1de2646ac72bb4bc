#ifndef C_SWITCHBOARD_ATOMICS_H
#define C_SWITCHBOARD_ATOMICS_H

// A one-word atomic flag for Switchboard's hot paths (observer removal, a transfer's end) and a counter, in C so the
// package needs neither the Synchronization module (iOS 18 / macOS 15) nor a lock per load on Apple platforms.
// Off Apple platforms (Linux) Switchboard uses Synchronization.Atomic instead, stored inline (no floor there).
// The compiler's __atomic builtins: the same code on clang for Linux and Apple platforms, and seen by
// the thread sanitizer.

#include <stdbool.h>

typedef struct {
    int value;
} sb_atomic_flag;

/// Reads the flag with acquire ordering.
static inline bool sb_atomic_flag_load(const sb_atomic_flag *flag) {
    return __atomic_load_n(&flag->value, __ATOMIC_ACQUIRE) != 0;
}

/// Sets the flag with release ordering.
static inline void sb_atomic_flag_set(sb_atomic_flag *flag) {
    __atomic_store_n(&flag->value, 1, __ATOMIC_RELEASE);
}

/// Sets the flag unless it was set; returns whether this call set it (acquire-release ordering).
static inline bool sb_atomic_flag_test_and_set(sb_atomic_flag *flag) {
    int expected = 0;
    return __atomic_compare_exchange_n(&flag->value, &expected, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

typedef struct {
    long value;
} sb_atomic_counter;

/// Adds `delta` (relaxed ordering) and returns the value before.
static inline long sb_atomic_counter_add(sb_atomic_counter *counter, long delta) {
    return __atomic_fetch_add(&counter->value, delta, __ATOMIC_RELAXED);
}

/// Reads the counter (relaxed ordering).
static inline long sb_atomic_counter_load(const sb_atomic_counter *counter) {
    return __atomic_load_n(&counter->value, __ATOMIC_RELAXED);
}

/// Tells the thread sanitizer that what this thread did so far happens before whatever a later
/// `sb_tsan_acquire` of the same address does (no effect without the sanitizer). For a hand-off the
/// sanitizer cannot see: a continuation resumed before its task suspended (the Swift runtime's fast
/// path takes no annotated step then).
void sb_tsan_release(const void *address);

/// The other half of `sb_tsan_release`.
void sb_tsan_acquire(const void *address);

#endif
