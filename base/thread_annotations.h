// Clang's thread-safety attributes, so the compiler checks the lock rules
// the comments used to state: which mutex guards a member (GUARDED_BY),
// which functions expect it held (REQUIRES, the ...Locked() methods) or not
// held (EXCLUDES). Checked by clang with -Wthread-safety (meson.build turns
// it on for clang builds); other compilers see nothing.
#pragma once

#if defined(__clang__)
#define WEBHOOKER_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define WEBHOOKER_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) WEBHOOKER_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY WEBHOOKER_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) WEBHOOKER_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) WEBHOOKER_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) WEBHOOKER_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) WEBHOOKER_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) WEBHOOKER_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) WEBHOOKER_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) WEBHOOKER_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) WEBHOOKER_THREAD_ANNOTATION(assert_capability(x))
// For the rare function whose locking the analysis cannot follow; say why.
#define NO_THREAD_SAFETY_ANALYSIS WEBHOOKER_THREAD_ANNOTATION(no_thread_safety_analysis)
