/// A container's place in the document: its key, then its parent's place, up to the top.
///
/// Only containers get a node (one small object each); a scalar's place is its container's
/// node plus a key held in place, so decoding a string or a number allocates nothing for
/// its path. The coding path as an array is built only when asked for — by an error, or by
/// a type that reads `codingPath`.
final class CodingPathNode {
    let key: any CodingKey
    let parent: CodingPathNode?

    init(key: any CodingKey, parent: CodingPathNode?) {
        self.key = key
        self.parent = parent
    }

    /// The keys from the top of the document down to `node` (empty for the top).
    static func path(_ node: CodingPathNode?) -> [any CodingKey] {
        var keys: [any CodingKey] = []
        var node = node
        while let current = node {
            keys.append(current.key)
            node = current.parent
        }
        return keys.reversed()
    }

    /// The keys down to `node`, then `key` when there is one.
    static func path(_ node: CodingPathNode?, then key: (any CodingKey)?) -> [any CodingKey] {
        guard let key else { return self.path(node) }
        return self.path(node) + [key]
    }
}
