#ifndef SETTEE_LMDB_GUARD_H
#define SETTEE_LMDB_GUARD_H

#include <lmdb.h>

#ifdef __cplusplus
extern "C" {
#endif

/// LMDB's calls that walk pages, guarded: where LMDB would abort the process
/// on a page it cannot make sense of (an assertion) or fault on a pointer a
/// damaged page gives it (SIGSEGV, SIGBUS), the call returns MDB_CORRUPTED
/// instead, and settee_lmdb_damage() says what was seen. The transaction
/// must then be aborted.
int settee_mdb_env_open(MDB_env *env, const char *path, unsigned int flags, mdb_mode_t mode);
int settee_mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned int flags, MDB_txn **txn);
int settee_mdb_txn_commit(MDB_txn *txn);
int settee_mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi);
int settee_mdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
int settee_mdb_put(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, unsigned int flags);
int settee_mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
int settee_mdb_drop(MDB_txn *txn, MDB_dbi dbi, int del);
int settee_mdb_stat(MDB_txn *txn, MDB_dbi dbi, MDB_stat *stat);
int settee_mdb_cursor_get(MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op);
int settee_mdb_cursor_put(MDB_cursor *cursor, MDB_val *key, MDB_val *data, unsigned int flags);
int settee_mdb_cursor_del(MDB_cursor *cursor, unsigned int flags);

/// What the last guarded call of this thread that returned MDB_CORRUPTED
/// because of a fault or an assertion saw ("" when none), and forgets it.
const char *settee_lmdb_take_damage(void);

/// Makes `env`'s assertions return through the guard (set before use).
void settee_lmdb_guard_environment(MDB_env *env);

#ifdef __cplusplus
}
#endif

#endif
