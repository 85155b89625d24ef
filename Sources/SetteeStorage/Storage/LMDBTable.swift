package import CSetteeLMDB

/// A named table (an LMDB database) of an environment: the handle every
/// transaction of the environment reads and writes it by. Only storage
/// knows what is inside.
package struct LMDBTable: Sendable, Hashable {
    package let dbi: MDB_dbi

    package init(dbi: MDB_dbi) {
        self.dbi = dbi
    }
}
