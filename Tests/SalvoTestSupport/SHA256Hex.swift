import SalvoTransport

/// SHA-256 as lowercase hex, for checking that bytes arrived intact.
public enum SHA256Hex {
    public static func of(_ bytes: [UInt8]) -> String { SHA256.hex(bytes) }
}
