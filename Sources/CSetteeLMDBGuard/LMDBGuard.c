#include "LMDBGuard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

// The guard point of this thread: set while one of LMDB's calls runs. The
// compiler's own setjmp saves a frame, a stack pointer and a label (five
// words), a fraction of sigsetjmp's cost on every call; the signal mask needs
// no restoring, the handlers running with SA_NODEFER.
typedef void *guard_buffer[5];
static __thread guard_buffer *guard_point;
static __thread char damage[512];

static struct sigaction previous_segv, previous_bus;
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;

static void chain(int signal, siginfo_t *info, void *context) {
    struct sigaction *previous = signal == SIGBUS ? &previous_bus : &previous_segv;
    if (previous->sa_flags & SA_SIGINFO) {
        if (previous->sa_sigaction) { previous->sa_sigaction(signal, info, context); return; }
    } else if (previous->sa_handler != SIG_DFL && previous->sa_handler != SIG_IGN) {
        previous->sa_handler(signal);
        return;
    }
    // The default: put it back; the fault happens again on return and ends the process.
    sigaction(signal, previous, NULL);
}

static void on_fault(int signal, siginfo_t *info, void *context) {
    guard_buffer *point = guard_point;
    if (point == NULL) { chain(signal, info, context); return; }
    guard_point = NULL;
    snprintf(damage, sizeof damage, "a damaged page led LMDB to %s at address %p",
             signal == SIGBUS ? "read past the end of the file (SIGBUS)" : "an address outside the database (SIGSEGV)",
             info ? info->si_addr : NULL);
    __builtin_longjmp(*point, 1);
}

static void install_handlers(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_fault;
    // NODEFER: the jump out leaves the signal unblocked without saving the mask at every call.
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previous_segv);
    sigaction(SIGBUS, &action, &previous_bus);
}

static void on_assert(MDB_env *env, const char *message) {
    guard_buffer *point = guard_point;
    const char *path = NULL;
    mdb_env_get_path(env, &path);
    if (point == NULL) {
        // LMDB aborts after this returns: say which database in words first.
        fprintf(stderr, "settee: the database at %s is damaged: LMDB stopped on a page it cannot read (%s); restore it from a copy\n",
                path ? path : "?", message ? message : "");
        return;
    }
    guard_point = NULL;
    snprintf(damage, sizeof damage, "LMDB stopped on a page it cannot read (%s)", message ? message : "");
    __builtin_longjmp(*point, 1);
}

void settee_lmdb_guard_environment(MDB_env *env) {
    pthread_once(&handlers_once, install_handlers);
    mdb_env_set_assert(env, on_assert);
}

const char *settee_lmdb_take_damage(void) {
    static __thread char taken[sizeof damage];
    memcpy(taken, damage, sizeof damage);
    damage[0] = 0;
    return taken;
}

#define GUARDED(call) \
    guard_buffer point; \
    guard_buffer *outer = guard_point; \
    if (__builtin_setjmp(point)) { guard_point = outer; return MDB_CORRUPTED; } \
    guard_point = &point; \
    int code = (call); \
    guard_point = outer; \
    return code;

int settee_mdb_env_open(MDB_env *env, const char *path, unsigned int flags, mdb_mode_t mode) { GUARDED(mdb_env_open(env, path, flags, mode)) }
int settee_mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned int flags, MDB_txn **txn) { GUARDED(mdb_txn_begin(env, parent, flags, txn)) }
int settee_mdb_txn_commit(MDB_txn *txn) { GUARDED(mdb_txn_commit(txn)) }
int settee_mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi) { GUARDED(mdb_dbi_open(txn, name, flags, dbi)) }
int settee_mdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data) { GUARDED(mdb_get(txn, dbi, key, data)) }
int settee_mdb_put(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, unsigned int flags) { GUARDED(mdb_put(txn, dbi, key, data, flags)) }
int settee_mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data) { GUARDED(mdb_del(txn, dbi, key, data)) }
int settee_mdb_drop(MDB_txn *txn, MDB_dbi dbi, int del) { GUARDED(mdb_drop(txn, dbi, del)) }
int settee_mdb_stat(MDB_txn *txn, MDB_dbi dbi, MDB_stat *stat) { GUARDED(mdb_stat(txn, dbi, stat)) }
int settee_mdb_cursor_get(MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op) { GUARDED(mdb_cursor_get(cursor, key, data, op)) }
int settee_mdb_cursor_put(MDB_cursor *cursor, MDB_val *key, MDB_val *data, unsigned int flags) { GUARDED(mdb_cursor_put(cursor, key, data, flags)) }
int settee_mdb_cursor_del(MDB_cursor *cursor, unsigned int flags) { GUARDED(mdb_cursor_del(cursor, flags)) }
