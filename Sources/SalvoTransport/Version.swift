/// The version of the Salvo package: every module, the command line and the engine's default
/// `User-Agent` (`salvo/<version>`) say the same. It follows Semantic Versioning; CHANGELOG.md
/// says what each version changed.
public enum SalvoVersion {
    /// `major.minor.patch`.
    public static let string = "0.9.0"

    /// The `User-Agent` Salvo sends unless told otherwise.
    public static let userAgent = "salvo/" + string
}
