// The library's public API is `Database` and the public types of the modules
// it is built from: an app writes `import Settee` and sees them all (their
// `package` internals stay invisible outside this package). Every public type
// of these modules is curated in Settee.docc.
//
// The re-exports are of whole modules: DocC leaves out the members that
// extensions in another file add to a type re-exported one declaration at a
// time (`import struct SetteeCore.JSONValue` loses `JSONValue.jsonText`).
@_exported public import SetteeCore
@_exported public import SetteeStorage
@_exported public import SetteeJavaScript
@_exported public import SetteeViews
@_exported public import SetteeFind
