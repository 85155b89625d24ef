// The library's public API is `Database` and the types of the modules it is
// built from: an app writes `import Settee` and sees them all.
@_exported import SetteeCore
@_exported import SetteeStorage
@_exported import SetteeJavaScript
@_exported import SetteeViews
@_exported import SetteeFind
