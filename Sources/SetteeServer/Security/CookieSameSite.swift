/// The `SameSite` attribute of the `AuthSession` cookie (CouchDB's
/// `[chttpd_auth] same_site`): whether browsers send the cookie with
/// requests that other sites start.
public enum CookieSameSite: String, Sendable, CaseIterable {
    /// `SameSite=None`: sent with every request, including cross-site ones
    /// (browsers require ``SetteeServer/Configuration/secureCookies`` with it).
    case none = "None"
    /// `SameSite=Lax`: sent with same-site requests and top-level navigations.
    case lax = "Lax"
    /// `SameSite=Strict`: sent with same-site requests only.
    case strict = "Strict"

    /// The attribute named as CouchDB's configuration names it, in any
    /// letter case (`none`, `lax`, `strict`); `nil` for any other word.
    public init?(configurationValue: String) {
        switch configurationValue.lowercased() {
        case "none": self = .none
        case "lax": self = .lax
        case "strict": self = .strict
        default: return nil
        }
    }
}
