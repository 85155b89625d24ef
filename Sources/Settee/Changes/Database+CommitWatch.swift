import SetteeStorage

extension Database {
    /// Starts noticing other processes' commits now, with `mode` (the first
    /// wait of a live query, feed or listener would start it with `.automatic`):
    /// for the benchmark, which compares the modes.
    package func watchOtherProcesses(mode: CommitWatch.Mode) {
        storeEvenIfClosed.commits.watchOtherProcesses(mode: mode)
    }

    /// How this process notices other processes' commits to the database;
    /// nil while nothing has waited for a commit.
    package var commitWatchMode: CommitWatch.Mode? {
        storeEvenIfClosed.commits.watchMode
    }
}
