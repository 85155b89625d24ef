/// What `settee --version` prints.
enum SetteeVersion {
    static let current = "0.1.0"
}
